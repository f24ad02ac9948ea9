// Webhooks `/webhooks`: the organization's endpoints of both modes, add one (its signing secret
// shown once), enable/disable, send a test event, rotate the secret (shown once), delete; and
// `/webhooks/{id}`: an endpoint's recent deliveries, each with Replay, a form to change its URL,
// events and description, and one to send again the deliveries that failed since a time. The
// work is the REST API's commands (dashboard/commands.ts); URLs and descriptions are the
// customer's text, shown as text.
import type { KeyMode } from '../../domain/platform.ts';
import { MAX_DESCRIPTION_LENGTH, MAX_URL_LENGTH, PREVIOUS_SECRET_VALID_MS, WEBHOOK_EVENT_TYPES } from '../../domain/webhooks.ts';
import { when } from './format.ts';
import { html, type Html } from './html.ts';
import { confirmDialog, modeChoice, notice, page, type Viewer } from './layout.ts';
import type { DeliveryListing, WebhookListing } from './model.ts';

/** What the edit form holds: the API's PATCH fields a member may change here. */
export interface WebhookEditForm {
  url: string;
  events: string[];
  description: string;
}

export interface WebhookForm extends WebhookEditForm {
  mode: KeyMode;
}

export interface WebhooksView {
  webhooks: WebhookListing[];
  /** Just made (added, or rotated): its secret, shown this once. */
  secret?: { url: string; secret: string; rotated?: { previousExpiresAt: string } };
  error?: string;
  done?: string | Html;
  form?: WebhookForm;
}

const PREVIOUS_HOURS = PREVIOUS_SECRET_VALID_MS / 3_600_000;

/** Enabled, or disabled and why: said in words, never by colour alone. */
export function webhookState(w: WebhookListing): string {
  if (w.enabled) return 'Enabled';
  if (w.disabledReason === 'gone') return 'Disabled: the endpoint answered 410 Gone';
  if (w.disabledReason === 'failing') return 'Disabled: every delivery failed for 5 days';
  return 'Disabled by a member';
}

/** One checkbox per event type, those in `chosen` ticked: the add and the edit form alike. */
function eventChecks(chosen: readonly string[]): Html {
  return html`<ul class="plain checks">${WEBHOOK_EVENT_TYPES.map((t) => html`<li><label><input type="checkbox" name="events" value="${t}"${chosen.includes(t) ? html` checked` : ''}> <code>${t}</code></label></li>`)}</ul>`;
}

function secretCard(view: NonNullable<WebhooksView['secret']>): Html {
  return html`<section class="card created" aria-labelledby="secret-title">
<h2 id="secret-title">${view.rotated ? 'New signing secret' : 'Endpoint added'} for <span class="wrap">${view.url}</span></h2>
<p>Copy the signing secret now: it is shown only this once.${view.rotated ? ` The old secret keeps signing beside it for ${PREVIOUS_HOURS} h (until ${when(view.rotated.previousExpiresAt)}), so your receiver can switch at its own pace.` : ''}</p>
<p class="secret"><code data-testid="new-webhook-secret" id="new-webhook-secret">${view.secret}</code> <button type="button" data-copy="new-webhook-secret">Copy</button> <span class="copied" role="status" aria-live="polite"></span></p>
</section>`;
}

function actions(viewer: Viewer, w: WebhookListing, i: number): Html {
  const base = `/webhooks/${encodeURIComponent(w.endpointId)}`;
  return html`<div class="actions">
<a href="${base}">Deliveries</a>
<a href="${base}#edit">Edit</a>
<form method="post" action="${base}/${w.enabled ? 'disable' : 'enable'}">${viewer.csrf}<button type="submit" class="secondary">${w.enabled ? 'Disable' : 'Enable'}</button></form>
${w.enabled ? html`<form method="post" action="${base}/test">${viewer.csrf}<button type="submit" class="secondary">Send test event</button></form>` : ''}
<form method="post" action="${base}/rotate-secret">${viewer.csrf}<button type="submit" class="secondary">Rotate secret</button></form>
<button type="button" class="danger" data-confirm="delete-webhook-${i}">Delete</button>${confirmDialog(viewer, { id: `delete-webhook-${i}`, action: `${base}/delete`, title: `Delete the endpoint ${w.url}?`, text: 'Nothing more is sent to it, and deliveries not yet made are dropped. This cannot be undone.', confirm: 'Delete endpoint' })}
</div>`;
}

export function webhooksPage(viewer: Viewer, view: WebhooksView): string {
  const form = view.form ?? { url: '', events: [], description: '', mode: 'live' as KeyMode };
  return page(
    viewer,
    'webhooks',
    'Webhooks',
    html`${view.error ? notice('error', view.error) : ''}${view.done ? notice('ok', view.done) : ''}
${view.secret ? secretCard(view.secret) : ''}
<section class="card" aria-labelledby="add-title">
<h2 id="add-title">Add an endpoint</h2>
<form method="post" action="/webhooks" class="stack">
  ${viewer.csrf}
  <label for="webhook-url">URL</label>
  <input id="webhook-url" name="url" type="url" required maxlength="2048" value="${form.url}" aria-describedby="webhook-url-hint">
  <p id="webhook-url-hint" class="hint">An https address of yours, e.g. https://example.com/hooks/vidtrack. Requests are signed (Standard Webhooks v1).</p>
  <fieldset><legend>Events</legend>
    ${eventChecks(form.events)}
  </fieldset>
  <label for="webhook-description">Description <span class="muted">(optional)</span></label>
  <input id="webhook-description" name="description" maxlength="500" value="${form.description}">
  ${modeChoice(form.mode, 'A live endpoint receives only live events, a test endpoint only test-mode events.')}
  <button type="submit">Add endpoint</button>
</form>
</section>
<section aria-labelledby="webhooks-title">
<h2 id="webhooks-title">Endpoints</h2>
${view.webhooks.length === 0 ? html`<p>No endpoints yet.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Webhook endpoints">
<table class="webhooks">
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Mode</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${view.webhooks.map(
      (w, i) => html`<tr>
  <td class="url"><code class="wrap">${w.url}</code>${w.description ? html`<br><span class="muted">${w.description}</span>` : ''}</td>
  <td><ul class="plain">${w.events.map((e) => html`<li><code>${e}</code></li>`)}</ul></td>
  <td>${w.mode}</td>
  <td><span class="badge ${w.enabled ? 'status-monitoring' : 'status-error'}">${webhookState(w)}</span></td>
  <td class="when">${when(w.createdAt)}</td>
  <td class="do">${actions(viewer, w, i)}</td>
</tr>`,
    )}</tbody>
</table>
</div>`}
</section>`,
  );
}

export interface WebhookView {
  webhook: WebhookListing;
  deliveries: DeliveryListing[];
  limit: number;
  /** Service time now: the recover form suggests the day before it. */
  now: Date;
  error?: string;
  done?: string;
  /** The edit form as the member sent it, kept when it was refused; else the endpoint as it is. */
  edit?: WebhookEditForm;
  /** The recover form's time as the member sent it (datetime-local, UTC), kept when it was refused. */
  since?: string;
}

/** A datetime-local value (UTC, to the minute) for an instant. */
function minuteOf(date: Date): string {
  return date.toISOString().slice(0, 16);
}

const SUGGESTED_RECOVER_MS = 24 * 3_600_000;

function editForm(viewer: Viewer, base: string, form: WebhookEditForm): Html {
  return html`<section class="card" id="edit" aria-labelledby="edit-title">
<h2 id="edit-title">Change the endpoint</h2>
<form method="post" action="${base}/edit" class="stack">
  ${viewer.csrf}
  <label for="edit-url">URL</label>
  <input id="edit-url" name="url" type="url" required maxlength="${MAX_URL_LENGTH}" value="${form.url}" aria-describedby="edit-url-hint">
  <p id="edit-url-hint" class="hint">An https address of yours. Deliveries not yet made go to the new address; the signing secret stays the same.</p>
  <fieldset><legend>Events</legend>
    ${eventChecks(form.events)}
  </fieldset>
  <label for="edit-description">Description <span class="muted">(optional; empty removes it)</span></label>
  <input id="edit-description" name="description" maxlength="${MAX_DESCRIPTION_LENGTH}" value="${form.description}">
  <button type="submit">Save changes</button>
</form>
</section>`;
}

function recoverForm(viewer: Viewer, base: string, w: WebhookListing, since: string): Html {
  return html`<section class="card" aria-labelledby="recover-title">
<h2 id="recover-title">Send failed deliveries again</h2>
<form method="post" action="${base}/recover" class="stack">
  ${viewer.csrf}
  <label for="recover-since">Failed since (UTC)</label>
  <input id="recover-since" name="since" type="datetime-local" required value="${since}" aria-describedby="recover-since-hint">
  <p id="recover-since-hint" class="hint">Every delivery to this endpoint that failed and was made at or after this time is sent again, with its own webhook-id, on a fresh retry schedule.${w.enabled ? '' : ' The endpoint is disabled: enable it first (on the Webhooks page), or they fail again at once.'}</p>
  <button type="submit" class="secondary">Send failed deliveries again</button>
</form>
</section>`;
}

export function webhookPage(viewer: Viewer, view: WebhookView): string {
  const w = view.webhook;
  const base = `/webhooks/${encodeURIComponent(w.endpointId)}`;
  return page(
    viewer,
    'webhooks',
    'Webhook endpoint',
    html`<p class="crumbs"><a href="/webhooks">Webhooks</a> › endpoint</p>
${view.error ? notice('error', view.error) : ''}${view.done ? notice('ok', view.done) : ''}
<dl class="meta">
  <div class="wide"><dt>URL</dt><dd class="wrap"><code>${w.url}</code></dd></div>
  ${w.description ? html`<div class="wide"><dt>Description</dt><dd class="description">${w.description}</dd></div>` : ''}
  <div><dt>Events</dt><dd>${w.events.join(', ')}</dd></div>
  <div><dt>Mode</dt><dd>${w.mode}</dd></div>
  <div><dt>Status</dt><dd>${webhookState(w)}</dd></div>
  <div><dt>Created</dt><dd>${when(w.createdAt)}</dd></div>
</dl>
${w.enabled ? html`<form method="post" action="${base}/test">${viewer.csrf}<button type="submit" class="secondary">Send test event</button></form>` : ''}
<section aria-labelledby="deliveries-title">
<h2 id="deliveries-title">Recent deliveries</h2>
${view.deliveries.length === 0 ? html`<p>No deliveries yet.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Deliveries">
<table class="deliveries">
<thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Last response</th><th scope="col">Next attempt</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${view.deliveries.map(
      (d) => html`<tr>
  <td><code>${d.eventType}</code></td>
  <td><span class="badge ${d.status === 'delivered' ? 'status-monitoring' : d.status === 'failed' ? 'status-error' : 'status-paused'}">${d.status}</span></td>
  <td class="num">${d.attempts}</td>
  <td>${d.lastStatus === null ? html`<span class="muted">none</span>` : `HTTP ${d.lastStatus}`}</td>
  <td>${d.nextAttemptAt ? when(d.nextAttemptAt) : html`<span class="muted">none</span>`}</td>
  <td class="when">${when(d.createdAt)}</td>
  <td><form method="post" action="${base}/deliveries/${encodeURIComponent(d.deliveryId)}/replay">${viewer.csrf}<button type="submit" class="secondary">Replay</button></form></td>
</tr>`,
    )}</tbody>
</table>
</div>
<p class="hint">The ${view.limit} most recent. Replay sends a delivery again with the same webhook-id.</p>`}
</section>
${recoverForm(viewer, base, w, view.since ?? minuteOf(new Date(view.now.getTime() - SUGGESTED_RECOVER_MS)))}
${editForm(viewer, base, view.edit ?? { url: w.url, events: w.events, description: w.description ?? '' })}`,
  );
}
