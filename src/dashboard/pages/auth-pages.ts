// Sign-in and invitation pages (their POSTs are the session plugin's: src/dashboard).
import { html, type Html } from './html.ts';
import { notice, publicPage } from './layout.ts';

export function loginPage(options: { csrf: Html; error?: string; email?: string }): string {
  return publicPage(
    'Sign in',
    html`${options.error ? notice('error', options.error) : ''}
<form method="post" action="/login" class="stack">
  ${options.csrf}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${options.email ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button type="submit">Sign in</button>
</form>`,
  );
}

export function invitePage(options: { csrf: Html; token: string; email: string; error?: string }): string {
  return publicPage(
    'Set your password',
    html`<p>You were invited to vidtrack as <strong>${options.email}</strong>. Choose a password of at least 12 characters.</p>
${options.error ? notice('error', options.error) : ''}
<form method="post" action="/invite/${encodeURIComponent(options.token)}" class="stack">
  ${options.csrf}
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required>
  <label for="confirm">Confirm password</label>
  <input id="confirm" name="confirm" type="password" autocomplete="new-password" minlength="12" required>
  <button type="submit">Set password</button>
</form>`,
  );
}

export function invalidInvitePage(): string {
  return publicPage(
    'Invitation not valid',
    html`${notice('error', 'This invitation link has been used, has expired or does not exist. Ask an owner of your organization for a new one.')}
<p><a href="/login">Sign in</a></p>`,
  );
}

/** The dashboard's per-address limit (sign-in) was reached: a 429 page, beside its Retry-After. */
export function tooManyRequestsPage(retryAfterSeconds: number | null): string {
  const wait = retryAfterSeconds === null ? 'a minute' : retryAfterSeconds <= 1 ? 'a second' : `${retryAfterSeconds} seconds`;
  return publicPage(
    'Too many attempts',
    html`${notice('error', `Too many attempts from your network: wait ${wait} and try again.`)}
<p><a href="/login">Sign in</a></p>`,
  );
}

/** A form came back without the token of a page we served (open too long, from another site or tab): a 403 page. */
export function expiredFormPage(): string {
  return publicPage(
    'This form has expired',
    html`${notice('error', 'This form has expired or did not come from this dashboard. Reload the page and try again.')}
<p><a href="/">Back to the dashboard</a></p>`,
  );
}
