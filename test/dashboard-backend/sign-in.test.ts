// Signing in to the dashboard over HTTP (the browser suite drives the same pages): one address
// in two organizations, with a password for each, signs in to the organization whose password
// it gives; an account's attempts are counted before their passwords are checked, so attempts
// sent at once get no more checks than attempts sent one by one; text PostgreSQL cannot hold is
// a 400 before and after sign-in, not a 503. Over plain http away from the service's own
// machine, where the browser would drop the Secure session cookie, the sign-in and invitation
// pages say so and sign no one in (no silent way back to the sign-in page).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { inviteMember, joinMember } from '../../src/commands/member-commands.ts';
import { hashPassword } from '../../src/dashboard/passwords.ts';
import { savePassword } from '../../src/dashboard/reads.ts';
import { SESSION_COOKIE, Sessions } from '../../src/dashboard/sessions.ts';
import { SignInThrottle } from '../../src/dashboard/sign-in-throttle.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function member(orgId: string, email: string, password: string): Promise<string> {
  const invited = await inviteMember(service.store, service.clock, systemClock, { orgId, email, role: 'owner', by: 'operator' });
  await joinMember(service.store, service.clock, systemClock, { orgId, memberId: invited.memberId, token: invited.token });
  await savePassword(service.db.pool, invited.memberId, await hashPassword(password));
  await service.settle();
  return invited.memberId;
}

/** What a form page (the sign-in page unless `url`) gives a browser: its CSRF token and the cookies that go with it. */
async function signInForm(options: { url?: string; headers?: Record<string, string> } = {}): Promise<{ token: string; cookies: string[] }> {
  const form = await service.app.inject({ url: options.url ?? '/login', headers: options.headers });
  const token = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
  assert.ok(token, `${options.url ?? '/login'} carries a CSRF token`);
  return { token, cookies: form.cookies.map((c) => `${c.name}=${c.value}`) };
}

/**
 * A form posted as the browser posts it: with the CSRF token of the sign-in page and its cookie.
 * `from`: the client's address (the per-address limit is 20 sign-ins a minute).
 */
async function post(
  url: string,
  fields: Record<string, string>,
  session?: string,
  options: { form?: { token: string; cookies: string[] }; from?: string; headers?: Record<string, string> } = {},
) {
  const { token, cookies } = options.form ?? (await signInForm());
  return service.app.inject({
    method: 'POST',
    url,
    remoteAddress: options.from,
    headers: { ...options.headers, cookie: [...cookies, ...(session ? [`${SESSION_COOKIE}=${session}`] : [])].join('; '), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...fields, _csrf: token }).toString(),
  });
}

async function signIn(email: string, password: string): Promise<string | null> {
  const answer = await post('/login', { email, password });
  if (answer.statusCode !== 303) return null;
  const session = answer.cookies.find((c) => c.name === SESSION_COOKIE)?.value;
  assert.ok(session, 'a session cookie is set');
  return session;
}

describe('dashboard sign-in', () => {
  it('one address in two organizations signs in to the one whose password it gives', async () => {
    const email = 'both@example.test';
    const first = await member((await service.organization()).orgId, email, 'password of the first org');
    const second = await member((await service.organization()).orgId, email, 'password of the second org');
    const sessions = new Sessions(service.db.pool, systemClock);
    const memberOf = async (password: string) => {
      const session = await signIn(email, password);
      return session ? (await sessions.lookup(session))?.memberId : null;
    };
    assert.equal(await memberOf('password of the first org'), first);
    assert.equal(await memberOf('password of the second org'), second);
    assert.equal(await memberOf('neither of the two passwords'), null);
  });

  it('checks at most 10 of 20 wrong passwords sent at once for one account; the others get the throttle\'s answer', async () => {
    const email = 'burst@example.test';
    await member((await service.organization()).orgId, email, 'the right password, not guessed');
    const form = await signInForm();
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('/login', { email, password: 'a wrong password' }, undefined, { form, from: '198.51.100.1' })));
    const statuses = answers.map((a) => a.statusCode);
    assert.equal(statuses.filter((s) => s === 401).length, 10, `checked: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 429).length, 10, `throttled: ${statuses.join(' ')}`);
    assert.match(answers.find((a) => a.statusCode === 429)!.body, /Too many sign-in attempts for this account/);
    // The account waits out its window: the right password, from elsewhere, is not checked either.
    const right = await post('/login', { email, password: 'the right password, not guessed' }, undefined, { from: '198.51.100.2' });
    assert.equal(right.statusCode, 429, right.body);
    // How long the account waits, said as the per-address limit says it: the window's rest.
    const retryAfter = Number(right.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 15 * 60, `Retry-After: ${right.headers['retry-after']}`);
  });

  it('checks 10 of 15 attempts sent at once, the right password last among them; the other 5 are throttled', async () => {
    const email = 'burst-with-right@example.test';
    await member((await service.organization()).orgId, email, 'the right password, sent last');
    const form = await signInForm();
    const passwords = [...Array.from({ length: 14 }, (_, i) => `wrong password number ${i}`), 'the right password, sent last'];
    const answers = await Promise.all(passwords.map((password) => post('/login', { email, password }, undefined, { form, from: '198.51.100.3' })));
    const statuses = answers.map((a) => a.statusCode);
    // Which 10 are checked is the order they arrive in; never more than 10.
    assert.equal(statuses.filter((s) => s === 401 || s === 303).length, 10, statuses.join(' '));
    assert.equal(statuses.filter((s) => s === 429).length, 5, statuses.join(' '));
    assert.ok(statuses.slice(0, 14).every((s) => s !== 303), 'no wrong password signs in');
  });

  it('refuses an address that cannot be one with 400 and the sign-in page, without counting it against any account', async () => {
    const tooLong = `${'a'.repeat(64)}@${'b'.repeat(190)}.test`;
    assert.ok(tooLong.length > 254);
    // Eleven tries: an account's eleventh attempt in its window would be throttled (429).
    for (let i = 1; i <= 11; i++) {
      const answer = await post('/login', { email: tooLong, password: 'whatever it is' }, undefined, { from: '198.51.100.4' });
      assert.equal(answer.statusCode, 400, `try ${i}: ${answer.body.slice(0, 200)}`);
      assert.match(answer.body, /Enter a valid e-mail address\./);
      assert.match(answer.body, /name="_csrf"/, 'the sign-in form, to try again');
    }
    const notAnAddress = await post('/login', { email: 'not an address', password: 'whatever it is' }, undefined, { from: '198.51.100.4' });
    assert.equal(notAnAddress.statusCode, 400, notAnAddress.body);
  });

  it('refuses NUL with 400, before and after sign-in', async () => {
    const signInAnswer = await post('/login', { email: 'a\u0000b@example.test', password: 'whatever it is' });
    assert.equal(signInAnswer.statusCode, 400, signInAnswer.body);
    await member((await service.organization()).orgId, 'searcher@example.test', 'a long enough password');
    const session = await signIn('searcher@example.test', 'a long enough password');
    assert.ok(session);
    const headers = { cookie: `${SESSION_COOKIE}=${session}` };
    for (const url of ['/videos?q=%00', '/videos/%00', '/webhooks/a%00b']) {
      const answer = await service.app.inject({ url, headers });
      assert.equal(answer.statusCode, 400, `${url}: ${answer.body}`);
    }
    const keyAnswer = await post('/keys', { name: 'a\u0000b', mode: 'live' }, session);
    assert.equal(keyAnswer.statusCode, 400, keyAnswer.body);
    assert.equal((await service.app.inject({ url: '/videos?q=fine', headers })).statusCode, 200);
  });
});

describe('signing in over plain http', () => {
  // What a browser sends at http://192.168.1.20:3000/ (a LAN address), and behind a proxy that
  // terminates TLS for https://dashboard.example.test/. A POST's Origin names the page's scheme.
  const lan = { host: '192.168.1.20:3000' };
  const proxied = { host: 'dashboard.example.test', 'x-forwarded-proto': 'https' };
  const why = /reached over plain http, and its session cookie is only sent over https[^]*Serve the dashboard over https/;
  const sessionsOf = async (memberId: string) =>
    (await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.sessions WHERE member_id = $1`, [memberId])).rows[0].n as number;

  it('away from the service\'s machine, says why on the sign-in page and refuses to sign in, instead of a cookie the browser drops', async () => {
    const email = 'lan@example.test';
    const memberId = await member((await service.organization()).orgId, email, 'the password over the lan');
    const page = await service.app.inject({ url: '/login', headers: lan });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, why);
    const form = await signInForm({ headers: lan });
    const answer = await post('/login', { email, password: 'the password over the lan' }, undefined, { form, from: '192.168.1.30', headers: { ...lan, origin: 'http://192.168.1.20:3000' } });
    assert.equal(answer.statusCode, 403, answer.body);
    assert.match(answer.body, why);
    assert.equal(answer.cookies.find((c) => c.name === SESSION_COOKIE), undefined, 'no session cookie');
    assert.equal(await sessionsOf(memberId), 0, 'no session');
  });

  it('accepting an invitation away from the service\'s machine says why, and leaves the invitation unused', async () => {
    const { orgId } = await service.organization();
    const invited = await inviteMember(service.store, service.clock, systemClock, { orgId, email: 'lan-invite@example.test', role: 'member', by: 'operator' });
    await service.settle();
    const url = `/invite/${invited.token}`;
    const page = await service.app.inject({ url, headers: lan });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, why);
    const form = await signInForm({ url, headers: lan });
    const fields = { password: 'a password over the lan', confirm: 'a password over the lan' };
    const answer = await post(url, fields, undefined, { form, headers: { ...lan, origin: 'http://192.168.1.20:3000' } });
    assert.equal(answer.statusCode, 403, answer.body);
    assert.match(answer.body, why);
    const unused = await service.app.inject({ url });
    assert.equal(unused.statusCode, 200, 'the invitation is still unused');
    assert.doesNotMatch(unused.body, why, 'nothing to explain on the service\'s own machine');
  });

  it('behind a proxy that terminates TLS, signs in with a Secure cookie; on the service\'s machine, with one that is not', async () => {
    const email = 'proxied@example.test';
    await member((await service.organization()).orgId, email, 'the password behind a proxy');
    const page = await service.app.inject({ url: '/login', headers: proxied });
    assert.doesNotMatch(page.body, why);
    const viaProxy = await post('/login', { email, password: 'the password behind a proxy' }, undefined, {
      form: await signInForm({ headers: proxied }),
      from: '192.168.1.31',
      headers: { ...proxied, origin: 'https://dashboard.example.test' },
    });
    assert.equal(viaProxy.statusCode, 303, viaProxy.body);
    assert.equal(viaProxy.cookies.find((c) => c.name === SESSION_COOKIE)?.secure, true);
    const local = await post('/login', { email, password: 'the password behind a proxy' }, undefined, { from: '127.0.0.1', headers: { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000' } });
    assert.equal(local.statusCode, 303, local.body);
    assert.ok(local.cookies.find((c) => c.name === SESSION_COOKIE), 'a session cookie');
    assert.notEqual(local.cookies.find((c) => c.name === SESSION_COOKIE)?.secure, true);
  });
});

describe('the per-account sign-in throttle', () => {
  it('counts an attempt when it starts: the 11th in 15 minutes is refused while the 10 before are still being checked', () => {
    const wall = new ManualClock('2026-11-01T00:00:00.000Z');
    const throttle = new SignInThrottle(wall);
    for (let i = 0; i < 10; i++) assert.equal(throttle.attempt('Ann@Example.test'), true, `attempt ${i + 1}`);
    assert.equal(throttle.attempt(' ann@example.test'), false, 'the same account, however typed');
    assert.equal(throttle.attempt('bob@example.test'), true, 'another account is not concerned');
    wall.advance(15 * 60_000 + 1);
    assert.equal(throttle.attempt('ann@example.test'), true, 'a new window');
  });

  it('does not count a right password, but keeps counting the wrong ones before it', () => {
    const throttle = new SignInThrottle(new ManualClock('2026-11-01T00:00:00.000Z'));
    // One who knows the address's password in one organization, guessing at another's: nine
    // guesses, one right sign-in, again and again, used to start the count again each time.
    for (let i = 0; i < 9; i++) assert.equal(throttle.attempt('ann@example.test'), true, `guess ${i + 1}`);
    assert.equal(throttle.attempt('ann@example.test'), true, 'the right password');
    throttle.succeeded('ann@example.test');
    assert.equal(throttle.attempt('ann@example.test'), true, 'the tenth guess');
    assert.equal(throttle.attempt('ann@example.test'), false, 'the eleventh attempt, right sign-ins not counted');
  });
});
