// The dashboard in a real headless Chromium against `npm start` (the real process, embedded
// PostgreSQL, admin CLI beside it), through the names a person sees (issue 10's contract):
// invitation to sign-in, keys and their use, tracking from the form, a video's charts and
// CSV, sign-out; and the attacks a dashboard must stand: CSRF, another organization's URLs,
// session fixation, markup in a platform's title. A screenshot of each page, at desktop and
// phone width, goes to test-artifacts/screenshots.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { closeBrowsers, launchBrowser, newContext, screenshot } from '../support/browser.ts';
import { serviceProcess, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';

const PASSWORD = 'correct horse battery staple';
let service: ServiceProcess;
let browser: Browser;

interface Person {
  orgId: string;
  email: string;
  context: BrowserContext;
  page: Page;
}

async function organization(name: string): Promise<{ orgId: string; inviteUrl: string; email: string }> {
  const email = `owner@${name.toLowerCase()}.test`;
  const { org_id: orgId } = (await service.admin('org', 'create', '--name', name, '--email', `ops@${name.toLowerCase()}.test`, '--plan', 'pro')) as { org_id: string };
  await service.admin('deposit', '--org', orgId, '--amount', '50');
  const invited = (await service.admin('member', 'invite', '--org', orgId, '--email', email, '--role', 'owner')) as { member_id: string; invite_url: string };
  assert.match(invited.member_id, /\S/);
  assert.match(invited.invite_url, /\/invite\/[\w-]+$/);
  return { orgId, inviteUrl: invited.invite_url, email };
}

/** Follows the invitation, sets the password: signed in at the end. */
async function acceptInvite(inviteUrl: string, email: string, orgId: string, shots = false): Promise<Person> {
  const context = await newContext(browser, service.base);
  const page = await context.newPage();
  await page.goto(new URL(inviteUrl).pathname);
  if (shots) await screenshot(page, 'invite');
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Confirm password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { orgId, email, context, page };
}

async function sessionCookie(context: BrowserContext): Promise<{ name: string; value: string; httpOnly: boolean; sameSite: string } | undefined> {
  const cookies = await context.cookies();
  return cookies.find((c) => c.httpOnly && /sess/i.test(c.name));
}

async function apiStatus(key: string, url = '/usage'): Promise<number> {
  return (await service.api('GET', url, key)).status;
}

describe('the dashboard in a browser', { timeout: 600_000 }, () => {
  let owner: Person;
  let other: Person;
  let videoId: string;
  const pageErrors: string[] = [];

  before(async () => {
    service = serviceProcess({ TIME_SCALE: '3600' });
    await service.start();
    browser = await launchBrowser();
  });

  after(async () => {
    try {
      await closeBrowsers();
    } finally {
      await service?.cleanup();
    }
  });

  it('an invitation leads to a password, and the password signs in; the session id is new at sign-in', async () => {
    const acme = await organization('Acme');
    owner = await acceptInvite(acme.inviteUrl, acme.email, acme.orgId, true);
    owner.page.on('pageerror', (e) => pageErrors.push(e.message));
    owner.page.on('dialog', (d) => {
      pageErrors.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    const cookie = await sessionCookie(owner.context);
    assert.ok(cookie, 'an HttpOnly session cookie is set');
    assert.equal(cookie.sameSite, 'Lax');
    // The link was for one use only.
    const reused = await owner.context.request.get(new URL(acme.inviteUrl).pathname);
    assert.ok(reused.status() >= 400, `a used invitation answered ${reused.status()}`);

    // Sign out, then sign in with an id an attacker planted: the session gets a new one.
    await owner.page.getByRole('button', { name: 'Sign out' }).click();
    await owner.page.waitForURL('**/login');
    await owner.context.addCookies([{ name: cookie.name, value: 'planted-by-an-attacker', url: service.base }]);
    await screenshot(owner.page, 'login');
    await owner.page.getByLabel('Email').fill(acme.email);
    await owner.page.getByLabel('Password').fill('wrong password, long enough');
    await owner.page.getByRole('button', { name: 'Sign in' }).click();
    await owner.page.getByRole('alert').waitFor();
    await owner.page.getByLabel('Email').fill(acme.email);
    await owner.page.getByLabel('Password').fill(PASSWORD);
    await owner.page.getByRole('button', { name: 'Sign in' }).click();
    await owner.page.getByRole('button', { name: 'Sign out' }).waitFor();
    const fresh = await sessionCookie(owner.context);
    assert.ok(fresh && fresh.value !== 'planted-by-an-attacker' && fresh.value !== cookie.value, 'sign-in issues a new session id');
    await screenshot(owner.page, 'overview');
  });

  it('a key is created, shown once, used by the API (Last used, Requests move), deleted and refused', async () => {
    const { page } = owner;
    await page.goto('/keys');
    await page.getByLabel('Name').fill('reporting server');
    await page.getByRole('radio', { name: 'Live' }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-key-value').textContent())?.trim() ?? '';
    assert.match(key, /^vt_live_/);
    // Post/Redirect/Get: the value is on the page the form redirected to, whose reload shows it
    // no more and creates no second key.
    assert.equal(new URL(page.url()).pathname, '/keys');
    await page.reload();
    assert.equal(await page.getByTestId('new-key-value').count(), 0, 'a reload shows the value no more');
    assert.equal(await page.getByRole('row').filter({ hasText: 'reporting server' }).count(), 1, 'a reload creates no key');
    for (let i = 0; i < 3; i++) assert.equal(await apiStatus(key), 200);

    const row = page.getByRole('row').filter({ hasText: 'reporting server' });
    const seen = await until('Requests of the new key to show 3 or more', async () => {
      await page.goto('/keys');
      const header = await page.getByRole('columnheader').allTextContents();
      const cells = await row.getByRole('cell').allTextContents();
      const requests = Number(cells[header.indexOf('Requests')]?.replace(/\D/g, ''));
      const lastUsed = cells[header.indexOf('Last used')] ?? '';
      return requests >= 3 && !/never/i.test(lastUsed) ? { requests, lastUsed } : undefined;
    }, 30_000, 500);
    assert.ok(seen.requests >= 3);
    assert.ok(!(await page.content()).includes(key), 'the value is not shown again');
    await screenshot(page, 'keys');

    await row.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete key' }).click();
    await page.getByRole('status').or(page.getByRole('alert')).first().waitFor();
    assert.equal(await apiStatus(key), 401, 'a deleted key is refused at once');
    assert.equal(await page.getByRole('row').filter({ hasText: 'reporting server' }).count(), 0);
  });

  it('tracks from the form: a good line, a bad line and a duplicate line, each with its result', async () => {
    const { page } = owner;
    await page.goto('/videos');
    const good = 'https://www.youtube.com/watch?v=dashBoard01';
    await page.getByLabel('Video links').fill([good, 'not a video link', good].join('\n'));
    await page.getByLabel('Days').fill('1');
    await page.getByRole('button', { name: 'Track' }).click();
    const items = page.getByTestId('track-results').getByRole('listitem');
    await items.first().waitFor();
    const texts = await items.allTextContents();
    assert.equal(texts.length, 3, texts.join(' | '));
    assert.match(texts[0]!, /^Tracked/);
    assert.match(texts[1]!, /Invalid/);
    assert.match(texts[2]!, /Already tracked/);
    const href = await items.first().getByRole('link').getAttribute('href');
    assert.match(href ?? '', /^\/videos\//);
    videoId = decodeURIComponent(href!.slice('/videos/'.length));
    await screenshot(page, 'videos');
    // Post/Redirect/Get: the results are on the list the form redirected to, whose reload
    // shows them no more and sends no link again.
    assert.equal(new URL(page.url()).pathname, '/videos');
    assert.equal(await page.getByLabel('Video links').inputValue(), 'not a video link', 'the line not tracked is back in the form');
    await page.reload();
    assert.equal(await page.getByTestId('track-results').count(), 0, 'a reload shows no results');
    assert.equal(await page.getByRole('row').filter({ hasText: good }).count(), 1, 'a reload tracks nothing again');
  });

  it("a video's page has one chart per metric with every snapshot as a point, and its CSV", async () => {
    const { page } = owner;
    // 1 day at TIME_SCALE=3600: 24 hourly snapshots in about 24 s.
    await until('the 1-day tracking to complete', async () => {
      await page.goto(`/videos/${encodeURIComponent(videoId)}`);
      return (await page.getByText('completed', { exact: true }).count()) > 0 ? true : undefined;
    }, 120_000, 1_000);
    for (const metric of ['views', 'likes', 'comments']) {
      const chart = page.getByTestId(`chart-${metric}`);
      assert.equal(await chart.getAttribute('data-points'), '24', `chart-${metric} points`);
      await chart.locator('canvas, svg').first().waitFor();
    }
    assert.equal(await page.getByTestId('chart-shares').count(), 0, 'YouTube reports no shares: no chart for them');
    await screenshot(page, 'video');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
    const csv = fs.readFileSync((await download.path())!, 'utf8').trim().split(/\r?\n/);
    assert.equal(csv.length, 25, 'a header and 24 rows');
    assert.match(csv[0]!, /^snapshot_id,snapshot_time,views/);
  });

  it('billing shows the ledger replayed from the log', async () => {
    const { page } = owner;
    await page.goto('/billing');
    await page.getByRole('cell', { name: /Deposit/ }).first().waitFor();
    await screenshot(page, 'billing');
    await page.goto('/members');
    await page.getByRole('cell', { name: new RegExp(owner.email) }).waitFor();
    // An owner invites a colleague, then changes their mind.
    await page.getByLabel('Email').fill('colleague@acme.test');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const sent = page.getByRole('status').filter({ hasText: 'Invitation sent to colleague@acme.test' });
    await sent.waitFor();
    assert.match((await sent.textContent()) ?? '', /\/invite\/[\w-]+/, 'the owner gets the link too, should the e-mail be lost');
    const row = page.getByRole('row').filter({ hasText: 'colleague@acme.test' });
    assert.match((await row.textContent()) ?? '', /invited/);
    await screenshot(page, 'members');
    // Post/Redirect/Get: a reload of the page showing the link does not invite again (which
    // would replace the link just shown).
    assert.equal(new URL(page.url()).pathname, '/members');
    await page.reload();
    assert.equal(await page.getByRole('status').count(), 0, 'a reload shows the link no more');
    assert.equal(await row.count(), 1);
    await row.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('button', { name: 'Remove member' }).click();
    await page.getByRole('status').filter({ hasText: 'removed' }).waitFor();
    assert.equal(await page.getByRole('row').filter({ hasText: 'colleague@acme.test' }).count(), 0);
  });

  it('refuses a form posted without its CSRF token', async () => {
    const before = (await owner.context.request.get('/keys')).status();
    assert.equal(before, 200);
    const forged = await owner.context.request.post('/keys', { form: { name: 'forged', mode: 'live' }, maxRedirects: 0 });
    assert.equal(forged.status(), 403, `a forged POST answered ${forged.status()}`);
    assert.match(await forged.text(), /This form has expired/);
    await owner.page.goto('/keys');
    assert.equal(await owner.page.getByRole('row').filter({ hasText: 'forged' }).count(), 0, 'no key was created');
  });

  it("answers 404 for another organization's video", async () => {
    const globex = await organization('Globex');
    other = await acceptInvite(globex.inviteUrl, globex.email, globex.orgId);
    const response = await other.page.goto(`/videos/${encodeURIComponent(videoId)}`);
    assert.equal(response?.status(), 404);
    assert.equal(await other.page.getByText('dashBoard01').count(), 0, "nothing of the other organization's video is shown");
    const csv = await other.context.request.get(`/videos/${encodeURIComponent(videoId)}/snapshots.csv`);
    assert.equal(csv.status(), 404);
    // Nor can they delete a key of the first organization, with a valid form of their own.
    const { key_id: keyId, api_key: key } = (await service.admin('key', 'create', '--org', owner.orgId, '--name', 'not theirs')) as { key_id: string; api_key: string };
    await other.page.goto('/keys');
    const token = await other.page.locator('form[action="/keys"] input[name="_csrf"]').getAttribute('value');
    const forged = await other.context.request.post(`/keys/${encodeURIComponent(keyId)}/delete`, { form: { _csrf: token ?? '' }, maxRedirects: 0 });
    assert.equal(forged.status(), 404);
    assert.equal(await apiStatus(key), 200, "the other organization's key still works");
  });

  it('shows a title full of markup as text: no script of it runs', async () => {
    const { page } = owner;
    await page.goto('/videos');
    await page.getByLabel('Video links').fill('https://www.youtube.com/watch?v=hostile0999');
    await page.getByLabel('Days').fill('1');
    await page.getByRole('button', { name: 'Track' }).click();
    const link = page.getByTestId('track-results').getByRole('link').first();
    await link.click();
    await page.getByRole('heading', { level: 1 }).waitFor();
    assert.match((await page.getByRole('heading', { level: 1 }).textContent()) ?? '', /<script>alert\("xss"\)<\/script>/);
    await page.goto('/videos');
    assert.equal(await page.locator('main script, main img, main iframe').count(), 0, 'no element from platform text');
    assert.deepEqual(pageErrors, [], 'no script ran and no page error happened');
  });

  it('works at phone width', async () => {
    const phone = await newContext(browser, service.base, 'phone');
    await phone.addCookies(await owner.context.cookies());
    const page = await phone.newPage();
    for (const [name, url] of [['overview', '/'], ['keys', '/keys'], ['videos', '/videos'], ['video', `/videos/${encodeURIComponent(videoId)}`], ['billing', '/billing']] as const) {
      await page.goto(url);
      const { overflow, culprits } = await page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > width + 1 && !e.closest('.scroll'));
        return { overflow: document.documentElement.scrollWidth - width, culprits: wide.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`) };
      });
      assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow} px at 360 px (wider than the page: ${culprits.join(', ')})`);
      await screenshot(page, `${name}-360`);
    }
    await phone.close();
  });

  it('signs out: the session ends at once', async () => {
    const { page, context } = owner;
    const kept = await context.cookies();
    await page.goto('/');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/login');
    // Whoever kept a copy of the cookie is signed out too: the session ended on the server.
    const replay = await newContext(browser, service.base);
    await replay.addCookies(kept);
    const after = await replay.request.get('/keys', { maxRedirects: 0 });
    await replay.close();
    assert.equal(after.status(), 303, 'the old session cookie no longer opens a page');
  });
});
