// Keys `/keys`: create one (its value shown once), the list with each key's use, delete one.
import type { KeyMode } from '../../domain/platform.ts';
import { count, when } from './format.ts';
import { html } from './html.ts';
import { confirmDialog, modeChoice, notice, page, type Viewer } from './layout.ts';
import type { KeyListing } from './model.ts';

export interface KeysView {
  keys: KeyListing[];
  /** Just created: its value, shown this once. */
  created?: { name: string; apiKey: string };
  error?: string;
  done?: string;
  form?: { name: string; mode: KeyMode };
}

export function keysPage(viewer: Viewer, view: KeysView): string {
  const active = view.keys.filter((k) => !k.revoked);
  const form = view.form ?? { name: '', mode: 'live' as KeyMode };
  return page(
    viewer,
    'keys',
    'API keys',
    html`${view.error ? notice('error', view.error) : ''}${view.done ? notice('ok', view.done) : ''}
${view.created ? html`<section class="card created" aria-labelledby="created-title">
<h2 id="created-title">Key “${view.created.name}” created</h2>
<p>Copy it now: it is shown only this once, and only its prefix afterwards.</p>
<p class="secret"><code data-testid="new-key-value" id="new-key-value">${view.created.apiKey}</code> <button type="button" data-copy="new-key-value">Copy</button> <span class="copied" role="status" aria-live="polite"></span></p>
</section>` : ''}
<section class="card" aria-labelledby="create-title">
<h2 id="create-title">Create a key</h2>
<form method="post" action="/keys" class="stack">
  ${viewer.csrf}
  <label for="key-name">Name</label>
  <input id="key-name" name="name" required maxlength="100" value="${form.name}" aria-describedby="key-name-hint">
  <p id="key-name-hint" class="hint">What it is for, e.g. “reporting server”.</p>
  ${modeChoice(form.mode, 'Live keys track real videos and are billed; test keys see only simulated test videos and are free.')}
  <button type="submit">Create key</button>
</form>
</section>
<section aria-labelledby="list-title">
<h2 id="list-title">Keys</h2>
${active.length === 0 ? html`<p>No keys yet.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Keys">
<table class="keys">
<thead><tr><th scope="col">Name</th><th scope="col">Mode</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col" class="num">Requests</th><th scope="col">Videos</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${active.map(
      (k, i) => html`<tr>
  <td>${k.name}</td><td>${k.mode}</td><td><code>${k.prefix}…</code></td>
  <td>${when(k.createdAt)}<br><span class="muted">by ${k.createdBy}</span></td>
  <td>${when(k.lastUsedAt)}</td><td class="num">${count(k.requests)}</td>
  <td>${k.videos.length === 0 ? html`<span class="muted">none</span>` : html`<ul class="plain">${k.videos.map((v) => html`<li><a href="/videos/${encodeURIComponent(v.videoId)}">${v.title}</a></li>`)}</ul>`}</td>
  <td><button type="button" class="danger" data-confirm="delete-${i}">Delete</button>${confirmDialog(viewer, { id: `delete-${i}`, action: `/keys/${encodeURIComponent(k.keyId)}/delete`, title: `Delete the key “${k.name}”?`, text: 'Requests with it are refused at once (401), in every API process. This cannot be undone.', confirm: 'Delete key' })}</td>
</tr>`,
    )}</tbody>
</table>
</div>
<p class="hint">Last used and request counts are at most a few seconds old.</p>`}
</section>`,
  );
}
