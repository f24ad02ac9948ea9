// Read-your-writes across processes: an API that follows a projector running elsewhere must
// answer every request with at least what was acknowledged before the request arrived. Here
// the three parties are wired as three processes would be (each with its own watcher): the
// projector, an admin CLI that acknowledges a change once its own watcher sees it projected,
// and the API. The API's watcher here never hears of the projector's pages at all (as when
// its LISTEN connection is down and its poll has not come round): whatever the API answers
// from must come from what it reads after each request arrived, never from what it kept.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { apiLogger, buildApp } from '../../src/api/app.ts';
import { systemClock } from '../../src/clock.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import { deposit, issueKey, openOrganization, revokeKey } from '../../src/commands/account-commands.ts';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/migrations.ts';
import type { Position } from '../../src/eventstore/port.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { listParked, retryParked } from '../../projections/parking.ts';
import { rebuildReadModels } from '../../projections/rebuild.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../../projections/watcher.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const PAIRS = 200;

describe('read-your-writes across processes', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let runner: ProjectionRunner;
  const cliWatcher = new ProjectionWatcher();
  /** Never follows the projector, and the API does not wait on it after a write (readYourWritesMs 0): the API learns nothing but what it reads per request. */
  const apiWatcher = new ProjectionWatcher();
  let app: Awaited<ReturnType<typeof buildApp>>;

  /** What the admin CLI does: append, then answer once the projector has passed the change. */
  async function acknowledged<T extends { position: Position | null }>(change: Promise<T>): Promise<T> {
    const result = await change;
    assert.ok(await cliWatcher.waitFor(result.position, 10_000), 'the projector passed the change within 10 s');
    return result;
  }

  before(async () => {
    db = await createTestDatabase();
    await migrate(db.pool, allMigrations);
    store = new PostgresEventStore(db.pool);
    runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
    await runner.start((error) => assert.fail(`projection runner failed: ${String(error)}`));
    const names = projections.map((p) => p.name);
    await cliWatcher.follow(db.url, db.pool, READ_SCHEMA, names);
    app = await buildApp(
      { pool: db.pool, store, collectors: createCollectorSet({ live: {}, fallbackToSimulator: true }), clock: systemClock, watcher: apiWatcher, isReady: () => true, readYourWritesMs: 0 },
      { logger: apiLogger('silent') },
    );
  });

  after(async () => {
    await app?.close();
    await apiWatcher.close();
    await cliWatcher.close();
    await runner?.stop();
    await store?.close();
    await db?.drop();
  });

  it(`a track right after an acknowledged deposit never answers 402 (${PAIRS} pairs)`, async () => {
    const { orgId } = await acknowledged(openOrganization(store, systemClock, { name: 'RYW', email: 'ryw@example.test', plan: 'enterprise', rateLimit: 100_000 }));
    const { apiKey } = await acknowledged(issueKey(store, systemClock, { orgId, name: 'k', mode: 'live' }));
    const headers = { 'x-api-key': apiKey };
    for (let i = 0; i < PAIRS; i++) {
      // The API has just read this organization's usage (and may keep it)...
      const before = await app.inject({ method: 'GET', url: '/api/v1/usage', headers });
      assert.equal(before.statusCode, 200);
      // ...then exactly one day's worth is deposited and acknowledged...
      await acknowledged(deposit(store, systemClock, orgId, 360_000, `pair ${i}`));
      // ...and the track that follows must see it.
      const tracked = await app.inject({
        method: 'POST',
        url: '/api/v1/videos/track',
        headers,
        payload: { video_link: `https://x.com/ryw/status/${1_000_000 + i}`, duration_days: 1 },
      });
      assert.equal(tracked.statusCode, 201, `pair ${i}: track answered ${tracked.statusCode} ${tracked.body}`);
    }
  });

  it(`a key revoked through the CLI is refused at once (${PAIRS / 4} keys)`, async () => {
    const { orgId } = await acknowledged(openOrganization(store, systemClock, { name: 'Revoke', email: 'rv@example.test', plan: 'enterprise', rateLimit: 100_000 }));
    for (let i = 0; i < PAIRS / 4; i++) {
      const { keyId, apiKey } = await acknowledged(issueKey(store, systemClock, { orgId, name: `k${i}`, mode: 'live' }));
      const headers = { 'x-api-key': apiKey };
      assert.equal((await app.inject({ method: 'GET', url: '/api/v1/usage', headers })).statusCode, 200, `key ${i} works once issued`);
      await acknowledged(revokeKey(store, systemClock, orgId, keyId));
      const refused = await app.inject({ method: 'GET', url: '/api/v1/usage', headers });
      assert.equal(refused.statusCode, 401, `key ${i}: answered ${refused.statusCode} after its revocation was acknowledged`);
    }
  });

  it('a parked deposit retried through the CLI counts at once, in GET /usage and in the 402 check', async () => {
    const { orgId } = await acknowledged(openOrganization(store, systemClock, { name: 'Parked', email: 'pk@example.test', plan: 'enterprise', rateLimit: 100_000 }));
    const { apiKey } = await acknowledged(issueKey(store, systemClock, { orgId, name: 'k', mode: 'live' }));
    const headers = { 'x-api-key': apiKey };
    const track = () =>
      app.inject({ method: 'POST', url: '/api/v1/videos/track', headers, payload: { video_link: 'https://x.com/ryw/status/2000000', duration_days: 1 } });
    // A deposit of one day's worth whose amount the usage read model cannot take: it is parked.
    const stream = `deposit-parked-${orgId}`;
    const data = { orgId, depositId: 'parked-1', amount: 'one day' as unknown, reference: null, at: new Date().toISOString() };
    await acknowledged(store.append(stream, [{ type: 'FundsDeposited', data }], 'no_stream'));
    const parked = (await listParked(db.pool, READ_SCHEMA)).filter((p) => p.stream_id === stream && p.projection === 'usage');
    assert.equal(parked.length, 1, 'the deposit is parked for usage');
    // The API reads (and may keep) the usage row without the deposit...
    const before = await app.inject({ method: 'GET', url: '/api/v1/usage', headers });
    assert.equal(before.json().balance_usd, 0);
    assert.equal((await track()).statusCode, 402);
    // ...then the operator mends the data and retries: the rows change, no checkpoint moves.
    await db.pool.query('UPDATE es.events SET data = $2 WHERE stream_id = $1', [stream, JSON.stringify({ ...data, amount: 360_000 })]);
    const outcome = await retryParked(store, db.pool, projections, READ_SCHEMA, parked[0]!.event_id);
    assert.deepEqual(outcome.applied.map((a) => a.projection), ['usage'], JSON.stringify(outcome));
    const after = await app.inject({ method: 'GET', url: '/api/v1/usage', headers });
    assert.equal(after.json().balance_usd, 0.36, 'GET /usage after the retry');
    const tracked = await track();
    assert.equal(tracked.statusCode, 201, `track after the retry answered ${tracked.statusCode} ${tracked.body}`);
  });

  it('a rebuild swapped in at the same position counts at once in GET /usage', async () => {
    const { orgId } = await acknowledged(openOrganization(store, systemClock, { name: 'Rebuilt', email: 'rb@example.test', plan: 'enterprise', rateLimit: 100_000 }));
    const { apiKey } = await acknowledged(issueKey(store, systemClock, { orgId, name: 'k', mode: 'live' }));
    const headers = { 'x-api-key': apiKey };
    const { position } = await acknowledged(deposit(store, systemClock, orgId, 360_000, 'to be mended'));
    // The API reads (and may keep) the usage row; then the operator mends the deposit in the log
    // and rebuilds: no event is appended, so the rebuilt tables come in at the same position.
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/usage', headers })).json().balance_usd, 0.36);
    await db.pool.query(`UPDATE es.events SET data = jsonb_set(data::jsonb, '{amount}', '720000')::json WHERE type = 'FundsDeposited' AND data->>'orgId' = $1`, [orgId]);
    await rebuildReadModels(store, db.pool, { projections: projections.filter((p) => p.name === 'usage'), liveSchema: READ_SCHEMA });
    const { rows } = await db.pool.query(`SELECT commit_position::text FROM ${READ_SCHEMA}.checkpoints WHERE projection = 'usage'`);
    assert.ok(BigInt(rows[0].commit_position) >= position!.commit, 'the rebuild reached the deposit');
    assert.equal((await app.inject({ method: 'GET', url: '/api/v1/usage', headers })).json().balance_usd, 0.72, 'GET /usage after the rebuild');
  });
});
