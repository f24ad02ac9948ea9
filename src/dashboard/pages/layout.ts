// The document around every page: the header with the organization, the navigation and the
// Sign out button, and the assets. Styles and scripts come only from /assets (the
// Content-Security-Policy allows nothing inline).
import type { KeyMode } from '../../domain/platform.ts';
import { html, type Html } from './html.ts';

export type Section = 'overview' | 'keys' | 'videos' | 'billing' | 'webhooks' | 'members';

/** Who is looking: a signed-in member, and the hidden CSRF field every form of theirs carries. */
export interface Viewer {
  readonly email: string;
  readonly role: 'owner' | 'member';
  readonly orgName: string;
  readonly csrf: Html;
}

const SECTIONS: ReadonlyArray<{ id: Section; label: string; href: string; ownerOnly?: boolean }> = [
  { id: 'overview', label: 'Overview', href: '/' },
  { id: 'keys', label: 'Keys', href: '/keys' },
  { id: 'videos', label: 'Videos', href: '/videos' },
  { id: 'billing', label: 'Billing', href: '/billing' },
  { id: 'webhooks', label: 'Webhooks', href: '/webhooks' },
  { id: 'members', label: 'Members', href: '/members', ownerOnly: true },
];

function documentOf(title: string, body: Html, options: { charts?: boolean } = {}): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · vidtrack</title>
<link rel="stylesheet" href="/assets/dashboard.css">
${options.charts ? html`<link rel="stylesheet" href="/assets/uplot/uPlot.min.css">
<script src="/assets/uplot/uPlot.iife.min.js" defer></script>
<script src="/assets/charts.js" defer></script>` : ''}
<script src="/assets/dashboard.js" defer></script>
</head>
${body}
</html>`.text;
}

/** A signed-in page. */
export function page(viewer: Viewer, section: Section, title: string, content: Html, options: { charts?: boolean } = {}): string {
  const links = SECTIONS.filter((s) => !s.ownerOnly || viewer.role === 'owner').map(
    (s) => html`<li><a href="${s.href}"${s.id === section ? html` aria-current="page"` : ''}>${s.label}</a></li>`,
  );
  return documentOf(
    title,
    html`<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <div class="brand"><a href="/">vidtrack</a> <span class="org">${viewer.orgName}</span></div>
  <nav aria-label="Sections"><ul>${links}</ul></nav>
  <form method="post" action="/logout" class="signout">${viewer.csrf}<span class="who">${viewer.email}</span> <button type="submit">Sign out</button></form>
</header>
<main id="main">
<h1>${title}</h1>
${content}
</main>
</body>`,
    options,
  );
}

/** A page for someone not signed in (sign-in, invitation). */
export function publicPage(title: string, content: Html): string {
  return documentOf(
    title,
    html`<body class="public">
<main id="main" class="narrow">
<p class="brand"><a href="/login">vidtrack</a></p>
<h1>${title}</h1>
${content}
</main>
</body>`,
  );
}

/** The Live/Test choice of a form that makes something of one mode (a key, a webhook endpoint). */
export function modeChoice(mode: KeyMode, hint: string): Html {
  return html`<fieldset><legend>Mode</legend>
    <label><input type="radio" name="mode" value="live"${mode === 'live' ? html` checked` : ''}> Live</label>
    <label><input type="radio" name="mode" value="test"${mode === 'test' ? html` checked` : ''}> Test</label>
    <p class="hint">${hint}</p>
  </fieldset>`;
}

/** An error or notice box; role=alert so screen readers announce it. */
export function notice(kind: 'error' | 'ok', text: string | Html): Html {
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}"><strong>${kind === 'error' ? 'Error: ' : 'Done: '}</strong>${text}</p>`;
}

/**
 * A confirmation opened by a `data-confirm="<id>"` button (assets/dashboard.js): a form that
 * posts to `action` only once the person presses `confirm`; Cancel (or Escape) closes it.
 */
export function confirmDialog(viewer: Viewer, dialog: { id: string; action: string; title: string; text: string; confirm: string }): Html {
  return html`<dialog id="${dialog.id}" aria-labelledby="${dialog.id}-title">
<form method="post" action="${dialog.action}">
  ${viewer.csrf}
  <h2 id="${dialog.id}-title">${dialog.title}</h2>
  <p>${dialog.text}</p>
  <p class="actions"><button type="submit" class="danger">${dialog.confirm}</button> <button type="button" data-close>Cancel</button></p>
</form>
</dialog>`;
}
