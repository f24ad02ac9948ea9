// The dashboard's Webhooks page in a real headless Chromium against `npm start`, with a real
// local receiver that checks every signature with the `standardwebhooks` reference verifier:
// add an endpoint through the form (its secret shown once), send a test event and see it
// arrive signed with that secret and listed as delivered, rotate, disable, delete after the
// confirmation; a refused URL is a form error; change an endpoint's URL, events and description
// on its page (the REST API sees the change; a refused URL is the API's message); send again
// the deliveries that failed since a time; another organization's endpoint is a 404.
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
  let orgId: string;
  /** A live API key of the page's organization, for the REST API's side of each check. */
  let key: string;
  let endpointPath: string;
  const pageErrors: string[] = [];

  before(async () => {
    receiver = await new WebhookReceiver().start();
    service = serviceProcess({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' });
    await service.start();
    browser = await launchBrowser();
    ({ page, orgId } = await signedInOwner('Hookco'));
    ({ api_key: key } = (await service.admin('key', 'create', '--org', orgId, '--name', 'checks')) as { api_key: string });
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
    // Post/Redirect/Get: a reload shows the secret no more and does not rotate again (which
    // would void the secret just shown).
    assert.equal(new URL(page.url()).pathname, '/webhooks');
    await page.reload();
    assert.equal(await page.getByTestId('new-webhook-secret').count(), 0, 'a reload shows the secret no more');
    assert.ok(!(await page.content()).includes(rotated));

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

  it("edits an endpoint's URL, events and description on its page, as the API's PATCH; a refused URL is the API's message and the form keeps what was typed", async () => {
    const before = `${receiver.url}/hooks/before-edit`;
    const made = await service.api('POST', '/webhooks', key, { url: before, events: ['snapshot.created'], description: 'before' });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id = made.body.id as string;
    const read = async () => {
      const got = await service.api('GET', `/webhooks/${id}`, key);
      assert.equal(got.status, 200, JSON.stringify(got.body));
      return got.body as { url: string; events: string[]; description: string | null };
    };
    await page.goto('/webhooks');
    await page.getByRole('row').filter({ hasText: before }).getByRole('link', { name: 'Edit' }).click();
    await page.waitForURL(`**/webhooks/${id}#edit`);
    assert.equal(await page.getByLabel('URL').inputValue(), before, 'the form starts from the endpoint as it is');
    assert.ok(await page.getByRole('checkbox', { name: 'snapshot.created' }).isChecked());
    assert.ok(!(await page.getByRole('checkbox', { name: 'tracking.completed' }).isChecked()));
    assert.equal(await page.getByLabel('Description').inputValue(), 'before');

    // Plain http to a host outside WEBHOOK_ALLOW_HOSTS: the API refuses it, and says why.
    const refusedUrl = 'http://example.com/hooks/vidtrack';
    const viaApi = await service.api('PATCH', `/webhooks/${id}`, key, { url: refusedUrl });
    assert.equal(viaApi.status, 400, JSON.stringify(viaApi.body));
    const apiMessage = viaApi.body.details[0].message as string;
    await page.getByLabel('URL').fill(refusedUrl);
    await page.getByRole('checkbox', { name: 'snapshot.created' }).uncheck();
    await page.getByRole('checkbox', { name: 'tracking.completed' }).check();
    await page.getByLabel('Description').fill('typed <b>here</b>');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.getByRole('button', { name: 'Save changes' }).click()]);
    assert.equal(refused.status(), 400);
    const alert = (await page.getByRole('alert').textContent()) ?? '';
    assert.ok(alert.includes(apiMessage), `the API's message "${apiMessage}" on the page: ${alert}`);
    assert.equal(await page.getByLabel('URL').inputValue(), refusedUrl, 'the form keeps what was typed');
    assert.ok(!(await page.getByRole('checkbox', { name: 'snapshot.created' }).isChecked()));
    assert.ok(await page.getByRole('checkbox', { name: 'tracking.completed' }).isChecked());
    assert.equal(await page.getByLabel('Description').inputValue(), 'typed <b>here</b>');
    const unchanged = await read();
    assert.deepEqual([unchanged.url, unchanged.events, unchanged.description], [before, ['snapshot.created'], 'before'], 'a refused edit changes nothing');

    const after = `${receiver.url}/hooks/after-edit`;
    await page.getByLabel('URL').fill(after);
    await page.getByRole('checkbox', { name: 'video.stopped' }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'saved' }).waitFor();
    const changed = await read();
    assert.equal(changed.url, after);
    assert.deepEqual([...changed.events].sort(), ['tracking.completed', 'video.stopped']);
    assert.equal(changed.description, 'typed <b>here</b>');
    assert.equal(((await page.locator('dd.description').textContent()) ?? '').trim(), 'typed <b>here</b>', 'the description is shown as text');
    assert.equal(await page.getByLabel('URL').inputValue(), after);

    // An emptied description is removed, as `description: null` does in the API.
    await page.getByLabel('Description').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'saved' }).waitFor();
    assert.equal((await read()).description, null);
    assert.equal(await page.locator('dd.description').count(), 0);
    assert.deepEqual(pageErrors, []);
  });

  it('sends again the deliveries that failed since a time, says how many, and they arrive signed', async () => {
    const FAILED = 3;
    const path = '/hooks/recover';
    const made = await service.api('POST', '/webhooks', key, { url: `${receiver.url}${path}`, events: ['balance.low'] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id = made.body.id as string;
    receiver.expect(path, made.body.secret);
    const deliveries = async () => (await service.api('GET', `/webhooks/${id}/deliveries`, key)).body.deliveries as Array<{ id: string; status: string; attempts: number }>;

    // Three test events, held at the receiver until all three are there (the endpoint stays
    // enabled meanwhile), then each answered 410 Gone: all fail, and the endpoint is disabled.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.script(path, ...Array.from({ length: FAILED }, () => ({ status: 410, hold: held })));
    for (let i = 0; i < FAILED; i++) {
      const sent = await service.api('POST', `/webhooks/${id}/test`, key);
      assert.equal(sent.status, 202, JSON.stringify(sent.body));
    }
    const first = await receiver.waitFor(path, FAILED, 30_000);
    release();
    const failed = await until(`${FAILED} failed deliveries`, async () => {
      const list = await deliveries();
      return list.length === FAILED && list.every((d) => d.status === 'failed') ? list : undefined;
    }, 30_000, 200);
    assert.deepEqual(failed.map((d) => d.id).sort(), first.map((r) => r.id).sort());
    // The 410 disables the endpoint after its delivery is marked: wait for that too.
    await until('the endpoint disabled by the 410s', async () => ((await service.api('GET', `/webhooks/${id}`, key)).body.enabled === false ? true : undefined), 30_000, 200);

    // Disabled by the 410s: the page says to enable it first; enabled from the list.
    await page.goto(`/webhooks/${id}`);
    assert.match((await page.locator('#recover-since-hint').textContent()) ?? '', /enable it first/);
    // Posted anyway (a form as it stood before the disable): refused as the API refuses it, and
    // the deliveries stay as they were.
    const csrf = await page.locator(`form[action="/webhooks/${id}/recover"] input[name="_csrf"]`).getAttribute('value');
    const early = new Date(Date.now() - 10 * 60_000).toISOString().slice(0, 16);
    const refused = await page.context().request.post(`/webhooks/${id}/recover`, { form: { _csrf: csrf ?? '', since: early }, maxRedirects: 0 });
    assert.equal(refused.status(), 400);
    assert.ok((await refused.text()).includes('Webhook endpoint is disabled'));
    const replayed = await page.context().request.post(`/webhooks/${id}/deliveries/${failed[0]!.id}/replay`, { form: { _csrf: csrf ?? '' }, maxRedirects: 0 });
    assert.equal(replayed.status(), 400);
    assert.ok((await replayed.text()).includes('Webhook endpoint is disabled'));
    assert.deepEqual(await deliveries(), failed, 'nothing queued again');
    await page.goto('/webhooks');
    await page.getByRole('row').filter({ hasText: path }).getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('status').filter({ hasText: 'enabled' }).waitFor();
    await page.goto(`/webhooks/${id}`);

    // A time after the failures: nothing to send, and the page says so.
    const minute = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().slice(0, 16);
    await page.getByLabel('Failed since (UTC)').fill(minute(2 * 60_000));
    await page.getByRole('button', { name: 'Send failed deliveries again' }).click();
    await page.getByRole('status').filter({ hasText: 'nothing was queued again' }).waitFor();
    assert.ok((await deliveries()).every((d) => d.status === 'failed'));

    // A time before them: all three go again, and the page counts them.
    const since = minute(-10 * 60_000);
    await page.getByLabel('Failed since (UTC)').fill(since);
    await page.getByRole('button', { name: 'Send failed deliveries again' }).click();
    const said = (await page.getByRole('status').filter({ hasText: 'queued again' }).textContent()) ?? '';
    assert.match(said, new RegExp(`\\b${FAILED} failed deliveries since ${since.replace('T', ' ')} UTC queued again`), said);
    assert.equal(await page.getByLabel('Failed since (UTC)').inputValue(), since, 'the form keeps the time it used');
    const all = await receiver.waitFor(path, 2 * FAILED, 30_000);
    const again = all.slice(FAILED);
    assert.deepEqual(again.map((r) => r.id).sort(), first.map((r) => r.id).sort(), 'each sent again with its own webhook-id');
    assert.ok(again.every((r) => r.verifiedWith[0] === true), 'signed with the endpoint secret');
    await until('the recovered deliveries delivered', async () => ((await deliveries()).every((d) => d.status === 'delivered' && d.attempts === 1) ? true : undefined), 30_000, 200);

    // A time the API would refuse, posted as a form could be forged: the API's message, a 400.
    const apiAnswer = await service.api('POST', `/webhooks/${id}/recover`, key, { since: 'yesterday' });
    assert.equal(apiAnswer.status, 400);
    const token = await page.locator(`form[action="/webhooks/${id}/recover"] input[name="_csrf"]`).getAttribute('value');
    const forged = await page.context().request.post(`/webhooks/${id}/recover`, { form: { _csrf: token ?? '', since: 'yesterday' }, maxRedirects: 0 });
    assert.equal(forged.status(), 400);
    assert.ok((await forged.text()).includes(apiAnswer.body.details[0].message), 'the API\'s message for `since`');
    await page.goto(`/webhooks/${id}`);
    await screenshot(page, 'webhook-recovered');
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
