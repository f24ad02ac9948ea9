// The dashboard's Webhooks page in a real headless Chromium against `npm start`, with a real
// local receiver that checks every signature with the `standardwebhooks` reference verifier:
// add an endpoint through the form (its secret shown once), send a test event and see it
// arrive signed with that secret and listed as delivered, rotate, disable, delete after the
// confirmation; a refused URL is a form error; another organization's endpoint is a 404.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { closeBrowsers, launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { serviceProcess, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

const PASSWORD = 'correct horse battery staple';
let service: ServiceProcess;
let browser: Browser;
let receiver: WebhookReceiver;

/** An organization with an owner who followed the invitation: signed in at the end. */
async function signedInOwner(name: string): Promise<{ orgId: string; page: Page }> {
  const { org_id: orgId } = (await service.admin('org', 'create', '--name', name, '--email', `ops@${name.toLowerCase()}.test`, '--plan', 'pro')) as { org_id: string };
  const invited = (await service.admin('member', 'invite', '--org', orgId, '--email', `owner@${name.toLowerCase()}.test`, '--role', 'owner')) as { invite_url: string };
  const context = await newContext(browser, service.base);
  const page = await context.newPage();
  await page.goto(new URL(invited.invite_url).pathname);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Confirm password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { orgId, page };
}

describe('the Webhooks page in a browser', { timeout: 300_000 }, () => {
  let page: Page;
  let endpointPath: string;
  const pageErrors: string[] = [];

  before(async () => {
    receiver = await new WebhookReceiver().start();
    service = serviceProcess({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' });
    await service.start();
    browser = await launchBrowser();
    ({ page } = await signedInOwner('Hookco'));
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });

  after(async () => {
    try {
      await closeBrowsers();
    } finally {
      await Promise.allSettled([service?.cleanup(), receiver?.stop()]);
    }
  });

  it('a refused URL is a form error (400), not a 500, and nothing is added', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.waitForURL('**/webhooks');
    await page.getByLabel('URL').fill('ftp://x');
    await page.getByRole('checkbox', { name: 'snapshot.created' }).check();
    // The browser's own type=url check would pass ftp://x: the server is the one refusing.
    const [response] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Add endpoint' }).click()]);
    assert.equal(response.status(), 400);
    const alert = (await page.getByRole('alert').textContent()) ?? '';
    assert.match(alert, /url|https|scheme/i, alert);
    assert.equal(await page.getByTestId('new-webhook-secret').count(), 0);
    assert.equal(await page.getByLabel('URL').inputValue(), 'ftp://x', 'the form keeps what was typed');
    assert.ok(await page.getByRole('checkbox', { name: 'snapshot.created' }).isChecked());
  });

  it('adds an endpoint, shows its secret once, and a test event arrives signed with it and is listed as delivered', async () => {
    const path = '/hooks/dashboard';
    const url = `${receiver.url}${path}`;
    await page.goto('/webhooks');
    await page.getByLabel('URL').fill(url);
    await page.getByRole('checkbox', { name: 'tracking.completed' }).check();
    await page.getByRole('checkbox', { name: 'snapshot.created' }).check();
    await page.getByLabel('Description').fill('<b>CRM</b> sync');
    await page.getByRole('radio', { name: 'Test' }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = ((await page.getByTestId('new-webhook-secret').textContent()) ?? '').trim();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    assert.ok(await page.getByRole('button', { name: 'Copy' }).isVisible());
    receiver.expect(path, secret);

    const row = page.getByRole('row').filter({ hasText: url });
    const cells = await row.getByRole('cell').allTextContents();
    assert.match(cells.join(' | '), /<b>CRM<\/b> sync/, 'the description is shown as text');
    assert.match(cells.join(' | '), /tracking\.completed/);
    assert.match(cells.join(' | '), /\btest\b/);
    assert.match(cells.join(' | '), /Enabled/);
    endpointPath = (await row.getByRole('link', { name: 'Deliveries' }).getAttribute('href')) ?? '';
    assert.match(endpointPath, /^\/webhooks\/wh_/);

    await page.goto('/webhooks');
    assert.equal(await page.getByTestId('new-webhook-secret').count(), 0);
    assert.ok(!(await page.content()).includes(secret), 'the secret is not shown again');

    await page.getByRole('row').filter({ hasText: url }).getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').filter({ hasText: 'webhook.test' }).waitFor();
    const [got] = await receiver.waitFor(path, 1, 30_000);
    assert.equal(got!.json.type, 'webhook.test');
    assert.deepEqual(got!.verifiedWith, [true], 'the reference verifier accepts the signature with the secret shown');

    await until('the delivery to show as delivered', async () => {
      await page.goto(endpointPath);
      const text = (await page.getByRole('row').filter({ hasText: 'webhook.test' }).textContent()) ?? '';
      return /delivered/.test(text) && /HTTP 200/.test(text) ? true : undefined;
    }, 30_000, 300);
    await screenshot(page, 'webhook');
    // Replay: the same delivery again, with the same webhook-id.
    await page.getByRole('row').filter({ hasText: 'webhook.test' }).getByRole('button', { name: 'Replay' }).click();
    await page.getByRole('status').filter({ hasText: 'sent again' }).waitFor();
    const both = await receiver.waitFor(path, 2, 30_000);
    assert.equal(both[1]!.id, both[0]!.id);
    assert.deepEqual(both[1]!.verifiedWith, [true]);
  });

  it('rotates the secret (the old one keeps signing for 24 h), disables, and deletes after the dialog', async () => {
    const url = `${receiver.url}/hooks/dashboard`;
    await page.goto('/webhooks');
    const row = () => page.getByRole('row').filter({ hasText: url });
    await row().getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = ((await page.getByTestId('new-webhook-secret').textContent()) ?? '').trim();
    assert.match(rotated, /^whsec_/);
    assert.match((await page.locator('.created').textContent()) ?? '', /24 h/);
    await screenshot(page, 'webhooks');

    await row().getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'disabled' }).waitFor();
    assert.match((await row().textContent()) ?? '', /Disabled by a member/);
    assert.equal(await row().getByRole('button', { name: 'Send test event' }).count(), 0);
    await row().getByRole('button', { name: 'Enable' }).waitFor();

    await row().getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByRole('status').filter({ hasText: 'deleted' }).waitFor();
    assert.equal(await row().count(), 0);
    assert.deepEqual(pageErrors, []);
  });

  it("answers 404 for another organization's endpoint, refuses a 21st endpoint as the API does, and works at 360 px", async () => {
    await page.goto('/webhooks');
    await page.getByLabel('URL').fill(`${receiver.url}/hooks/kept`);
    await page.getByRole('checkbox', { name: 'balance.low' }).check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByTestId('new-webhook-secret').waitFor();
    const kept = (await page.getByRole('row').filter({ hasText: '/hooks/kept' }).getByRole('link', { name: 'Deliveries' }).getAttribute('href'))!;

    const { page: other, orgId: otherOrgId } = await signedInOwner('Otherco');
    assert.equal((await other.goto(kept))?.status(), 404);
    await other.goto('/webhooks');
    const token = await other.locator('form[action="/webhooks"] input[name="_csrf"]').getAttribute('value');
    const forged = await other.context().request.post(`${kept}/delete`, { form: { _csrf: token ?? '' }, maxRedirects: 0 });
    assert.equal(forged.status(), 404);
    assert.equal((await page.goto(kept))?.status(), 200, 'the endpoint is still there for its own organization');

    // The API's limit, counted over both modes: 20 made through the API, the 21st refused on the form.
    const { api_key: key } = (await service.admin('key', 'create', '--org', otherOrgId, '--name', 'hooks')) as { api_key: string };
    for (let i = 0; i < 20; i++) {
      const made = await service.api('POST', '/webhooks', key, { url: `${receiver.url}/hooks/other-${i}`, events: ['balance.low'] });
      assert.equal(made.status, 201, JSON.stringify(made.body));
    }
    await other.goto('/webhooks');
    await other.getByLabel('URL').fill(`${receiver.url}/hooks/one-too-many`);
    await other.getByRole('checkbox', { name: 'balance.low' }).check();
    await other.getByRole('radio', { name: 'Test' }).check();
    const [refused] = await Promise.all([other.waitForResponse((r) => r.request().method() === 'POST'), other.getByRole('button', { name: 'Add endpoint' }).click()]);
    assert.equal(refused.status(), 400);
    assert.match((await other.getByRole('alert').textContent()) ?? '', /at most 20/);
    assert.equal(await other.getByRole('row').filter({ hasText: 'one-too-many' }).count(), 0);

    const phone = await newContext(browser, service.base, 'phone');
    await phone.addCookies(await page.context().cookies());
    const small = await phone.newPage();
    for (const url of ['/webhooks', kept]) {
      await small.goto(url);
      const overflow = await small.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 1, `${url} scrolls sideways by ${overflow} px at 360 px`);
    }
    await small.goto('/webhooks');
    await screenshot(small, 'webhooks-360');
    await phone.close();
  });
});
