// Invitations over HTTP: an owner invites an address again while its invitation is unused (the
// e-mail was lost, the week went by), and the new link replaces the old one, which stops
// working; an address that is a member is refused, as before. Accepting an invitation refuses a
// password that already signs the address in to another organization (sign-in takes the first
// membership whose password matches: the new one would be out of reach), also when two
// invitations are accepted at once; that comparison is counted by the sign-in throttle, and a
// join starts the count again, as a right password at sign-in does. An
// acceptance that fails part way (the database refuses the password or the join) leaves the
// link usable, and the password the member then chooses is the one that signs them in.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { inviteMember, joinMember } from '../../src/commands/member-commands.ts';
import { hashPassword } from '../../src/dashboard/passwords.ts';
import { savePassword } from '../../src/dashboard/reads.ts';
import { Sessions } from '../../src/dashboard/sessions.ts';
import { DashboardClient } from '../support/dashboard-client.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
/** The service's DATA_DIR: invitation e-mails land in its `mail/` (no SMTP here). */
let dataDir: string;
before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-invitations-'));
  service = await startTestService({ env: { DATA_DIR: dataDir } });
});
after(async () => {
  try {
    await service?.close();
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

/** A member who joined and set `password`. */
async function member(orgId: string, email: string, password: string, role: 'owner' | 'member' = 'owner'): Promise<string> {
  const invited = await inviteMember(service.store, service.clock, systemClock, { orgId, email, role, by: 'operator' });
  await joinMember(service.store, service.clock, systemClock, { orgId, memberId: invited.memberId, token: invited.token });
  await savePassword(service.db.pool, invited.memberId, await hashPassword(password));
  await service.settle();
  return invited.memberId;
}

async function ownerBrowser(orgId: string, email: string) {
  const ownerId = await member(orgId, email, 'the owner password, long enough');
  const client = new DashboardClient(service.app, { session: await new Sessions(service.db.pool, systemClock).start(ownerId) });
  /** Sends the invitation form; the members page it redirects to (Post/Redirect/Get). */
  const invite = async (fields: { email: string; role: string }) => {
    const sent = await client.post('/members', '/members', fields);
    assert.equal(sent.statusCode, 303, sent.body);
    assert.equal(sent.headers.location, '/members');
    return client.get('/members');
  };
  return Object.assign(client, { invite });
}

const linkIn = (body: string) => {
  const url = /<code class="wrap">([^<]+)<\/code>/.exec(body)?.[1];
  assert.ok(url, 'the page shows the invitation link');
  return new URL(url).pathname;
};

describe('inviting an address again', () => {
  it('from the members page, replaces its unused invitation: the old link stops working, the new one works; a member is refused', async () => {
    const { orgId } = await service.organization();
    const owner = await ownerBrowser(orgId, 'owner@reinvite.test');
    const first = await owner.invite({ email: 'new@reinvite.test', role: 'member' });
    assert.match(first.body, /Invitation sent to new@reinvite\.test/);
    assert.doesNotMatch(first.body, /earlier invitation/);
    const firstLink = linkIn(first.body);

    const again = await owner.invite({ email: 'New@Reinvite.test', role: 'owner' });
    assert.match(again.body, /Their earlier invitation link no longer works/);
    const secondLink = linkIn(again.body);
    assert.notEqual(secondLink, firstLink);
    // One row for the address in the list: the new invitation.
    assert.equal(again.body.match(/new@reinvite\.test<\/td>/g)?.length, 1);

    const person = new DashboardClient(service.app);
    assert.equal((await person.get(firstLink)).statusCode, 410);
    const refused = await person.post(secondLink, firstLink, { password: 'a password for the new one', confirm: 'a password for the new one' });
    assert.equal(refused.statusCode, 410, 'the old link sets no password');
    const joined = await person.post(secondLink, secondLink, { password: 'a password for the new one', confirm: 'a password for the new one' });
    assert.equal(joined.statusCode, 303, joined.body);
    const { rows } = await service.db.pool.query(`SELECT role, status FROM rm.members WHERE org_id = $1 AND email = 'new@reinvite.test' ORDER BY status = 'active'`, [orgId]);
    assert.deepEqual(rows, [{ role: 'member', status: 'removed' }, { role: 'owner', status: 'active' }]);

    const member = await owner.post('/members', '/members', { email: 'new@reinvite.test', role: 'member' });
    assert.equal(member.statusCode, 400);
    assert.match(member.body, /new@reinvite\.test is already a member\./);
  });
});

describe('a password for a new membership', () => {
  const sessions = () => new Sessions(service.db.pool, systemClock);
  /** The member a sign-in with this address and password opens, or null. */
  async function signsInTo(email: string, password: string, from: string): Promise<string | null> {
    const browser = new DashboardClient(service.app, { from });
    const answer = await browser.post('/login', '/login', { email, password });
    if (answer.statusCode !== 303) return null;
    return (await sessions().lookup(browser.session))?.memberId ?? null;
  }
  const invitation = async (orgId: string, email: string) => {
    const invited = await inviteMember(service.store, service.clock, systemClock, { orgId, email, role: 'member', by: 'operator' });
    await service.settle();
    return { memberId: invited.memberId, link: `/invite/${invited.token}` };
  };
  const accept = (link: string, password: string) => new DashboardClient(service.app).post(link, link, { password, confirm: password });

  it('is refused when it already signs the address in to another organization; another one opens the new organization', async () => {
    const email = 'two-orgs@example.test';
    const first = await member((await service.organization()).orgId, email, 'the password of the first org');
    const second = await invitation((await service.organization()).orgId, email);
    const reused = await accept(second.link, 'the password of the first org');
    assert.equal(reused.statusCode, 400, reused.body);
    assert.match(reused.body, /This password already signs you in to another organization: choose a different one/);
    assert.match(reused.body, /name="password"/, 'the form again, to choose another');
    assert.equal((await new DashboardClient(service.app).get(second.link)).statusCode, 200, 'the invitation is still unused');
    const joined = await accept(second.link, 'the password of the second org');
    assert.equal(joined.statusCode, 303, joined.body);
    assert.equal(await signsInTo(email, 'the password of the first org', '203.0.113.1'), first);
    assert.equal(await signsInTo(email, 'the password of the second org', '203.0.113.1'), second.memberId);
  });

  it('is refused for the second of two invitations accepted at once with the same password', async () => {
    const email = 'at-once@example.test';
    const [one, two] = [await invitation((await service.organization()).orgId, email), await invitation((await service.organization()).orgId, email)];
    const answers = await Promise.all([accept(one.link, 'one password for both'), accept(two.link, 'one password for both')]);
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [303, 400], answers.map((a) => a.body).join('\n'));
    const joined = answers[0]!.statusCode === 303 ? one : two;
    assert.equal(await signsInTo(email, 'one password for both', '203.0.113.2'), joined.memberId);
  });

  /**
   * Runs `work` while the database refuses `statement` (a trigger on `table`, for rows where
   * `when` holds): a real failure of that step, gone again also when `work` fails.
   */
  async function whileRefusing(table: string, when: string, work: () => Promise<void>): Promise<void> {
    const pool = service.db.pool;
    await pool.query(`CREATE OR REPLACE FUNCTION public.refuse_for_test() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    await pool.query(`CREATE TRIGGER refuse_for_test BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION public.refuse_for_test()`);
    try {
      await work();
    } finally {
      await pool.query(`DROP TRIGGER refuse_for_test ON ${table}`);
    }
  }

  it('that cannot be saved leaves the invitation unused: accepted again, the member signs in', async () => {
    const email = 'save-fails@example.test';
    const invited = await invitation((await service.organization()).orgId, email);
    await whileRefusing('dashboard.credentials', `NEW.member_id = '${invited.memberId}'`, async () => {
      const failed = await accept(invited.link, 'the password that was not saved');
      assert.equal(failed.statusCode, 503, failed.body);
    });
    assert.equal((await new DashboardClient(service.app).get(invited.link)).statusCode, 200, 'the invitation is still unused');
    const joined = await accept(invited.link, 'the password saved at last');
    assert.equal(joined.statusCode, 303, joined.body);
    assert.equal(await signsInTo(email, 'the password saved at last', '203.0.113.4'), invited.memberId);
  });

  it('saved before a join that fails opens nothing, and the next acceptance replaces it', async () => {
    const email = 'join-fails@example.test';
    const invited = await invitation((await service.organization()).orgId, email);
    await whileRefusing('es.events', `NEW.type = 'MemberJoined' AND NEW.data->>'memberId' = '${invited.memberId}'`, async () => {
      const failed = await accept(invited.link, 'the password of the failed join');
      assert.equal(failed.statusCode, 503, failed.body);
    });
    assert.equal(await signsInTo(email, 'the password of the failed join', '203.0.113.5'), null, 'not a member yet');
    assert.equal((await new DashboardClient(service.app).get(invited.link)).statusCode, 200, 'the invitation is still unused');
    const joined = await accept(invited.link, 'the password of the join');
    assert.equal(joined.statusCode, 303, joined.body);
    assert.equal(await signsInTo(email, 'the password of the failed join', '203.0.113.5'), null, 'replaced');
    assert.equal(await signsInTo(email, 'the password of the join', '203.0.113.5'), invited.memberId);
  });

  it('sent twice at once through one link: one joins, and its password is the one kept', async () => {
    const email = 'one-link-twice@example.test';
    const invited = await invitation((await service.organization()).orgId, email);
    const passwords = ['the first of two passwords', 'the second of two passwords'];
    const answers = await Promise.all(passwords.map((p) => accept(invited.link, p)));
    assert.deepEqual(answers.map((a) => a.statusCode).sort(), [303, 410], answers.map((a) => a.body).join('\n'));
    const [kept, refused] = answers[0]!.statusCode === 303 ? passwords : [...passwords].reverse();
    assert.equal(await signsInTo(email, kept!, '203.0.113.6'), invited.memberId);
    assert.equal(await signsInTo(email, refused!, '203.0.113.6'), null);
  });

  it('is compared with the other passwords only while the account may be tried: after 10 failed sign-ins, the throttle answers', async () => {
    const email = 'guessed@example.test';
    await member((await service.organization()).orgId, email, 'the password being guessed');
    for (let i = 0; i < 10; i++) assert.equal(await signsInTo(email, `guess number ${i}`, '203.0.113.3'), null);
    const second = await invitation((await service.organization()).orgId, email);
    const throttled = await accept(second.link, 'the password being guessed');
    assert.equal(throttled.statusCode, 429, throttled.body);
    assert.match(throttled.body, /Too many password attempts for this account/);
    const retryAfter = Number(throttled.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 15 * 60, `Retry-After: ${throttled.headers['retry-after']}`);
    assert.equal((await new DashboardClient(service.app).get(second.link)).statusCode, 200, 'the invitation is still unused');
  });

  it('once joined, leaves the account all 10 sign-in attempts of its window, as a right password at sign-in does', async () => {
    const email = 'joined-fresh@example.test';
    const invited = await invitation((await service.organization()).orgId, email);
    assert.equal((await accept(invited.link, 'the password of the new member')).statusCode, 303);
    const signIn = (password: string) => new DashboardClient(service.app, { from: '203.0.113.7' }).post('/login', '/login', { email, password });
    for (let i = 1; i <= 10; i++) assert.equal((await signIn(`a mistyped password ${i}`)).statusCode, 401, `sign-in ${i} is checked, and wrong`);
    assert.equal((await signIn('the password of the new member')).statusCode, 429, "the 11th is the throttle's");
  });
});
