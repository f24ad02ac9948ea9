// Keys over HTTP. Creating one is Post/Redirect/Get: the POST creates the key and answers 303
// to /keys, which shows its value once; a reload shows it no more and creates nothing, and the
// value is in no log, no cookie and, in clear, no table. Deleting one waits (boundedly) for the
// read models to show it: when that wait runs out, the page says the deletion is recorded and
// takes effect in a moment, rather than reporting it done above a list that may still show it.
// Deleting is Post/Redirect/Get too: /keys says it once, and a reload deletes nothing again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { issueKey } from '../../src/commands/account-commands.ts';
import { SESSION_COOKIE, Sessions } from '../../src/dashboard/sessions.ts';
import { DashboardClient } from '../support/dashboard-client.ts';
import { signedInOwner as owner } from '../support/dashboard-owner.ts';
import { capturedLog } from '../support/captured-log.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { until } from '../support/wait.ts';

let service: TestService;
/** Every line the API logged. */
const { stream: logStream, lines: logged } = capturedLog();
before(async () => {
  service = await startTestService({ logStream });
});
after(() => service?.close());

const signedInOwner = () => owner(service);

const keyCount = async (orgId: string) => (await service.db.pool.query(`SELECT count(*)::int AS n FROM rm.api_keys WHERE org_id = $1`, [orgId])).rows[0].n as number;
const shownKey = (body: string) => /data-testid="new-key-value"[^>]*>([^<]+)</.exec(body)?.[1];

describe('creating a key in the dashboard', () => {
  it('redirects to the page that shows its value once; a reload shows it no more and creates no key', async () => {
    const { orgId, memberId, client } = await signedInOwner();
    const before = await keyCount(orgId);
    const created = await client.post('/keys', '/keys', { name: 'reporting server', mode: 'live' });
    assert.equal(created.statusCode, 303, created.body);
    assert.equal(created.headers.location, '/keys');
    assert.equal(await keyCount(orgId), before + 1);
    // What the table holds while the value waits for its page, and what another session of the member sees meanwhile.
    const held = (await service.db.pool.query(`SELECT s::text AS row FROM dashboard.sessions s WHERE shown_once IS NOT NULL`)).rows.map((r) => r.row as string);
    assert.equal(held.length, 1, 'the session holds the value for its page');
    const elsewhere = new DashboardClient(service.app, { session: await new Sessions(service.db.pool, systemClock).start(memberId) });
    assert.equal(shownKey((await elsewhere.get('/keys')).body), undefined, "another session of the member's is not shown it");

    const shown = await client.get('/keys');
    assert.equal(shown.statusCode, 200, shown.body);
    assert.match(shown.body, /Key “reporting server” created/);
    const key = shownKey(shown.body);
    assert.match(key ?? '', /^vt_live_/, 'the page after the redirect shows the new key');
    assert.equal((await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': key! } })).statusCode, 200, 'the value shown is the key');

    const reloaded = await client.get('/keys');
    assert.equal(reloaded.statusCode, 200);
    assert.equal(shownKey(reloaded.body), undefined, 'a reload shows no value');
    assert.ok(!reloaded.body.includes(key!), 'nor the key anywhere on the page');
    assert.equal(await keyCount(orgId), before + 1, 'a reload creates no key');

    const sessions = await service.db.pool.query(`SELECT s::text AS row FROM dashboard.sessions s`);
    for (const row of [...held, ...sessions.rows.map((r) => r.row as string)]) assert.ok(!row.includes(key!), 'no session row holds the key in clear');
    assert.equal((await service.db.pool.query(`SELECT 1 FROM dashboard.sessions WHERE shown_once IS NOT NULL`)).rowCount, 0, 'nothing is held once shown');
    for (const answer of [created, shown, reloaded]) {
      for (const c of answer.cookies) assert.ok(!c.value.includes(key!), `cookie ${c.name} holds no key`);
    }
    assert.ok(logged.length > 0, 'the API logged its requests');
    assert.ok(!logged.some((line) => line.includes(key!)), 'no log line holds the key');
  });

  it('a HEAD of the page (a link checker, a prefetch) does not use up the value it shows once', async () => {
    const { client } = await signedInOwner();
    assert.equal((await client.post('/keys', '/keys', { name: 'checked by HEAD', mode: 'test' })).statusCode, 303);
    const head = await service.app.inject({ method: 'HEAD', url: '/keys', headers: { cookie: `${SESSION_COOKIE}=${client.session}` } });
    assert.equal(head.statusCode, 200, head.body);
    const shown = await client.get('/keys');
    assert.match(shownKey(shown.body) ?? '', /^vt_test_/, 'the GET after the HEAD still shows the new key');
    assert.equal(shownKey((await client.get('/keys')).body), undefined, 'and only once');
  });
});

describe('deleting a key in the dashboard', () => {
  /** A key of the organization, projected, that the API accepts. */
  async function key(orgId: string, name: string) {
    const issued = await issueKey(service.store, service.clock, { orgId, name, mode: 'live' });
    await service.settle();
    return issued;
  }
  const usage = async (apiKey: string) => (await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': apiKey } })).statusCode;
  const listed = (body: string, name: string) => body.includes(`<td>${name}</td>`);
  /** Deletes the key from the keys page; the page its 303 leads to (Post/Redirect/Get). */
  async function deletedThenShown(client: DashboardClient, keyId: string) {
    const answer = await client.post('/keys', `/keys/${keyId}/delete`, {});
    assert.equal(answer.statusCode, 303, answer.body);
    assert.equal(answer.headers.location, '/keys');
    return client.get('/keys');
  }

  it('says the key was deleted once the read models show it', async () => {
    const { orgId, client } = await signedInOwner();
    const { keyId, apiKey } = await key(orgId, 'old laptop');
    const deleted = await deletedThenShown(client, keyId);
    assert.match(deleted.body, /The key was deleted: requests with it are refused from now on\./);
    assert.ok(!listed(deleted.body, 'old laptop'));
    assert.equal(await usage(apiKey), 401);
    const reloaded = await client.get('/keys');
    assert.doesNotMatch(reloaded.body, /class="notice/, 'a reload says nothing: no second deletion, no "already deleted"');
    assert.equal((await service.db.pool.query(`SELECT count(*)::int AS n FROM es.events WHERE type = 'ApiKeyRevoked' AND data->>'keyId' = $1`, [keyId])).rows[0].n, 1);
  });

  it('says the deletion is recorded and shows in a moment when the read models lag past the wait', async () => {
    const { orgId, client } = await signedInOwner();
    const { keyId, apiKey } = await key(orgId, 'lagging key');
    // The key's read-model row locked by another transaction: the projector's update of it
    // waits, past the dashboard's 2 s wait for the read models, until the lock is let go.
    const lock = await service.db.pool.connect();
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await lock.query('ROLLBACK');
    };
    try {
      await lock.query('BEGIN');
      await lock.query(`SELECT 1 FROM rm.api_keys WHERE key_id = $1 FOR UPDATE`, [keyId]);
      const deleted = await deletedThenShown(client, keyId);
      assert.match(deleted.body, /The deletion is recorded and takes effect in a moment/);
      assert.doesNotMatch(deleted.body, /The key was deleted/, 'no claim the read models do not back');
      assert.ok(listed(deleted.body, 'lagging key'), 'the list is the read model as it stands: still with the key');
      await release();
    } finally {
      await release().catch(() => undefined);
      lock.release();
    }
    await until('the deleted key to leave the list', async () => (listed((await client.get('/keys')).body, 'lagging key') ? undefined : true), 10_000);
    assert.equal(await usage(apiKey), 401);
  });
});
