// Signing in to the dashboard over HTTP (the browser suite drives the same pages): one address
// in two organizations, with a password for each, signs in to the organization whose password
// it gives; text PostgreSQL cannot hold is a 400 before and after sign-in, not a 503.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { inviteMember, joinMember } from '../../src/commands/member-commands.ts';
import { hashPassword } from '../../src/dashboard/passwords.ts';
import { savePassword } from '../../src/dashboard/reads.ts';
import { SESSION_COOKIE, Sessions } from '../../src/dashboard/sessions.ts';
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

/** A form posted as the browser posts it: with the CSRF token of the sign-in page and its cookie. */
async function post(url: string, fields: Record<string, string>, session?: string) {
  const form = await service.app.inject({ url: '/login' });
  const token = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
  assert.ok(token, 'the sign-in page carries a CSRF token');
  const cookies = form.cookies.map((c) => `${c.name}=${c.value}`);
  if (session) cookies.push(`${SESSION_COOKIE}=${session}`);
  return service.app.inject({
    method: 'POST',
    url,
    headers: { cookie: cookies.join('; '), 'content-type': 'application/x-www-form-urlencoded' },
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
