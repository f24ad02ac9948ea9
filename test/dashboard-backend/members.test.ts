// Members over HTTP. Inviting and removing are Post/Redirect/Get: the POST does the work and
// answers 303 to /members, which says what was done once; a reload of that page invites
// nobody again (no second e-mail, and the link just shown keeps working) and removes nothing.
// Here every invitation e-mail fails (an SMTP server that hangs up), so the page gives the
// link itself, the case where showing it once matters most.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { DashboardClient } from '../support/dashboard-client.ts';
import { signedInOwner } from '../support/dashboard-owner.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
/** An SMTP server that closes every connection at once: each e-mail fails, without a wait. */
const hangUp = net.createServer((socket) => socket.destroy());
before(async () => {
  await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
  const { port } = hangUp.address() as net.AddressInfo;
  service = await startTestService({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
});
after(async () => {
  try {
    await service?.close();
  } finally {
    await new Promise((resolve) => hangUp.close(resolve));
  }
});

const eventCount = async (orgId: string, type: string) =>
  (await service.db.pool.query(`SELECT count(*)::int AS n FROM es.events WHERE type = $1 AND data->>'orgId' = $2`, [type, orgId])).rows[0].n as number;
const linkIn = (body: string) => /<code class="wrap">([^<]+)<\/code>/.exec(body)?.[1];

describe('members in the dashboard', () => {
  it('an invitation whose e-mail failed redirects to the page that gives its link once; a reload invites nobody again and the link still works', async () => {
    const { orgId, client } = await signedInOwner(service);
    const invited = await client.post('/members', '/members', { email: 'unmailed@members.test', role: 'member' });
    assert.equal(invited.statusCode, 303, invited.body);
    assert.equal(invited.headers.location, '/members');
    const invitations = await eventCount(orgId, 'MemberInvited');

    const shown = await client.get('/members');
    assert.equal(shown.statusCode, 200, shown.body);
    assert.match(shown.body, /The invitation stands, but its e-mail could not be sent: give unmailed@members\.test this link/);
    const link = linkIn(shown.body);
    assert.ok(link, 'the page after the redirect shows the link');

    const reloaded = await client.get('/members');
    assert.equal(reloaded.statusCode, 200);
    assert.equal(linkIn(reloaded.body), undefined, 'a reload shows the link no more');
    assert.ok(!reloaded.body.includes(link), 'nor anywhere on the page');
    assert.equal(await eventCount(orgId, 'MemberInvited'), invitations, 'a reload invites nobody');
    assert.equal((await new DashboardClient(service.app).get(new URL(link).pathname)).statusCode, 200, 'the link shown still works');
  });

  it('removing a member redirects to the page that says so once; a reload removes nothing', async () => {
    const { orgId, client } = await signedInOwner(service);
    await client.post('/members', '/members', { email: 'leaving@members.test', role: 'member' });
    await client.get('/members');
    const { rows } = await service.db.pool.query(`SELECT member_id AS id FROM rm.members WHERE org_id = $1 AND email = 'leaving@members.test'`, [orgId]);
    assert.equal(rows.length, 1);
    const removed = await client.post('/members', `/members/${rows[0].id}/remove`, {});
    assert.equal(removed.statusCode, 303, removed.body);
    assert.equal(removed.headers.location, '/members');
    const removals = await eventCount(orgId, 'MemberRemoved');
    const shown = await client.get('/members');
    assert.match(shown.body, /The member was removed\./);
    const reloaded = await client.get('/members');
    assert.doesNotMatch(reloaded.body, /The member was removed\./, 'a reload says nothing');
    assert.doesNotMatch(reloaded.body, /class="notice/, 'nor any error');
    assert.equal(await eventCount(orgId, 'MemberRemoved'), removals, 'a reload removes nothing');
  });
});
