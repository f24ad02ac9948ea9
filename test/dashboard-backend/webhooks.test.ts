// Webhook endpoints over HTTP. Every form that changes one is Post/Redirect/Get: the POST does
// the work and answers 303 to the page that shows its outcome once (a new or rotated secret,
// a confirmation); a reload of that page shows it no more and changes nothing: no second
// endpoint, no second rotation (which would void the secret just shown), no second test event.
// The secret is in no log, no cookie and, in clear, no session row.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DashboardClient } from '../support/dashboard-client.ts';
import { signedInOwner } from '../support/dashboard-owner.ts';
import { capturedLog } from '../support/captured-log.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
/** Every line the API logged. */
const { stream: logStream, lines: logged } = capturedLog();
before(async () => {
  // An http URL on 127.0.0.1 is accepted when saved; nothing is sent (no webhook reactor here).
  service = await startTestService({ logStream, env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' } });
});
after(() => service?.close());

const HOOK = 'http://127.0.0.1:9/hooks/prg';
const endpoints = async (orgId: string) =>
  (await service.db.pool.query(`SELECT endpoint_id AS id, sealed_secret AS sealed FROM rm.webhook_endpoints WHERE org_id = $1 ORDER BY created_at`, [orgId])).rows as Array<{ id: string; sealed: string }>;
/** The organization's one endpoint's id. */
async function onlyEndpoint(orgId: string): Promise<string> {
  const all = await endpoints(orgId);
  assert.equal(all.length, 1);
  return all[0]!.id;
}
/** How many events the log holds about the endpoint: a reload must add none. */
const eventsOf = async (endpointId: string) => (await service.db.pool.query(`SELECT count(*)::int AS n FROM es.events WHERE data->>'endpointId' = $1`, [endpointId])).rows[0].n as number;
const shownSecret = (body: string) => /data-testid="new-webhook-secret"[^>]*>([^<]+)</.exec(body)?.[1];
const okNotice = (body: string) => /class="notice ok"[^>]*>([\s\S]*?)<\/p>/.exec(body)?.[1];

/** The answer to the form is 303 to `page`; that page, then its reload. */
async function redirectedThenReloaded(client: DashboardClient, answer: Awaited<ReturnType<DashboardClient['get']>>, page: string) {
  assert.equal(answer.statusCode, 303, answer.body);
  assert.equal(answer.headers.location, page);
  const shown = await client.get(page);
  assert.equal(shown.statusCode, 200, shown.body);
  const reloaded = await client.get(page);
  assert.equal(reloaded.statusCode, 200, reloaded.body);
  return { shown, reloaded };
}

async function assertNowhereButThePage(secret: string, answers: Array<{ cookies: Array<{ name: string; value: string }> }>) {
  const sessions = await service.db.pool.query(`SELECT s::text AS row FROM dashboard.sessions s`);
  for (const r of sessions.rows) assert.ok(!(r.row as string).includes(secret), 'no session row holds the secret in clear');
  for (const answer of answers) for (const c of answer.cookies) assert.ok(!c.value.includes(secret), `cookie ${c.name} holds no secret`);
  assert.ok(logged.length > 0, 'the API logged its requests');
  assert.ok(!logged.some((line) => line.includes(secret)), 'no log line holds the secret');
}

describe('webhook endpoints in the dashboard', () => {
  it('adding one redirects to the list, which shows its secret once; a reload shows it no more and adds no endpoint', async () => {
    const { orgId, client } = await signedInOwner(service);
    const added = await client.post('/webhooks', '/webhooks', { url: HOOK, events: 'snapshot.created', mode: 'live' });
    assert.equal((await endpoints(orgId)).length, 1);
    const { shown, reloaded } = await redirectedThenReloaded(client, added, '/webhooks');
    const secret = shownSecret(shown.body);
    assert.match(secret ?? '', /^whsec_[A-Za-z0-9+/]+=*$/, 'the page after the redirect shows the secret');
    assert.match(shown.body, /Endpoint added/);
    assert.equal(shownSecret(reloaded.body), undefined, 'a reload shows no secret');
    assert.ok(!reloaded.body.includes(secret!), 'nor the secret anywhere on the page');
    assert.equal((await endpoints(orgId)).length, 1, 'a reload adds no endpoint');
    await assertNowhereButThePage(secret!, [added, shown, reloaded]);
  });

  it('rotating the secret redirects to the list, which shows the new one once; a reload rotates nothing', async () => {
    const { orgId, client } = await signedInOwner(service);
    await client.post('/webhooks', '/webhooks', { url: HOOK, events: 'snapshot.created', mode: 'live' });
    await client.get('/webhooks');
    const [before] = await endpoints(orgId);
    const rotated = await client.post('/webhooks', `/webhooks/${before!.id}/rotate-secret`, {});
    const { shown, reloaded } = await redirectedThenReloaded(client, rotated, '/webhooks');
    const secret = shownSecret(shown.body);
    assert.match(secret ?? '', /^whsec_/);
    assert.match(shown.body, /New signing secret/);
    const [after] = await endpoints(orgId);
    assert.notEqual(after!.sealed, before!.sealed, 'the rotation happened');
    const eventsAfter = await eventsOf(before!.id);

    assert.equal(shownSecret(reloaded.body), undefined, 'a reload shows no secret');
    assert.ok(!reloaded.body.includes(secret!));
    assert.equal((await endpoints(orgId))[0]!.sealed, after!.sealed, 'a reload rotates nothing: the secret shown is still the one that signs');
    assert.equal(await eventsOf(before!.id), eventsAfter);
    await assertNowhereButThePage(secret!, [rotated, shown, reloaded]);
  });

  it('disable, enable, a test event and delete each redirect to the list, which confirms once; a reload does nothing again', async () => {
    const { orgId, client } = await signedInOwner(service);
    await client.post('/webhooks', '/webhooks', { url: HOOK, events: 'snapshot.created', mode: 'live' });
    await client.get('/webhooks');
    const id = await onlyEndpoint(orgId);
    for (const [action, said] of [
      ['disable', /The endpoint is disabled/],
      ['enable', /The endpoint is enabled/],
      ['test', /webhook\.test<\/code> event is on its way/],
      ['delete', /The endpoint was deleted/],
    ] as const) {
      const answer = await client.post('/webhooks', `/webhooks/${id}/${action}`, {});
      const events = await eventsOf(id);
      const { shown, reloaded } = await redirectedThenReloaded(client, answer, '/webhooks');
      assert.match(okNotice(shown.body) ?? '', said, `${action}: the page after the redirect says it`);
      assert.equal(okNotice(reloaded.body), undefined, `${action}: a reload says nothing`);
      assert.equal(await eventsOf(id), events, `${action}: a reload records nothing`);
    }
  });

  it("the endpoint page's edit and recover forms redirect to it, which confirms once", async () => {
    const { orgId, client } = await signedInOwner(service);
    await client.post('/webhooks', '/webhooks', { url: HOOK, events: 'snapshot.created', mode: 'live' });
    await client.get('/webhooks');
    const id = await onlyEndpoint(orgId);
    const page = `/webhooks/${id}`;

    const edited = await client.post(page, `${page}/edit`, { url: `${HOOK}/edited`, events: 'tracking.completed', description: 'edited' });
    const events = await eventsOf(id);
    const edit = await redirectedThenReloaded(client, edited, page);
    assert.match(okNotice(edit.shown.body) ?? '', /The endpoint is saved/);
    assert.match(edit.shown.body, /hooks\/prg\/edited/);
    assert.equal(okNotice(edit.reloaded.body), undefined, 'a reload says nothing');
    assert.equal(await eventsOf(id), events, 'a reload records nothing');

    const recovered = await client.post(page, `${page}/recover`, { since: '2020-01-01T00:00' });
    const recover = await redirectedThenReloaded(client, recovered, page);
    assert.match(okNotice(recover.shown.body) ?? '', /No delivery to this endpoint has failed since 2020-01-01 00:00 UTC/);
    assert.match(recover.shown.body, /id="recover-since"[^>]*value="2020-01-01T00:00"/, 'the form keeps the time it used');
    assert.equal(okNotice(recover.reloaded.body), undefined, 'a reload says nothing');
  });

  it('a refused form still answers the POST with the form and its error', async () => {
    const { orgId, client } = await signedInOwner(service);
    const refused = await client.post('/webhooks', '/webhooks', { url: 'ftp://x', events: 'snapshot.created', mode: 'live' });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.body, /value="ftp:\/\/x"/, 'the form keeps what was typed');
    assert.equal((await endpoints(orgId)).length, 0);
  });
});
