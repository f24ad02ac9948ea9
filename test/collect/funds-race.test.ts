// Funds are exact across schedulers while the projector lags. Two schedulers (two holders over
// one database) sweep, together and in turn, while the usage projection cannot move: a
// transaction left open holds every reader of the log below it (DESIGN §2), the way a slow
// projector or a stalled write does. Each sweep's wait for the projection times out, so its
// leases go back with spending the read models do not show. Whoever takes them next must not
// spend that money again: no organization's live snapshots may ever cost more than its funds,
// and once the projection moves on, the videos it cannot pay for pause.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type pg from 'pg';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue, type WorkDeps } from '../../src/collect/work.ts';
import { parseUsd, SNAPSHOT_PRICE } from '../../src/domain/money.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { track, youtubeLink } from './rounds.ts';

let service: TestService;
beforeEach(async () => {
  service = await startTestService();
});
afterEach(() => service.close());

/** Live spending of an organization as the log holds it (not as the read models say). */
async function liveSpending(pool: pg.Pool, orgId: string): Promise<number> {
  const { rows } = await pool.query<{ spent: string | null }>(
    `SELECT sum((data->>'price')::bigint)::text AS spent FROM es.events WHERE type = 'SnapshotRecorded' AND data->>'orgId' = $1`,
    [orgId],
  );
  return Number(rows[0]!.spent ?? 0);
}

/** Holds every reader of the log below this point until released. */
async function stallProjection(pool: pg.Pool): Promise<() => Promise<void>> {
  const client = await pool.connect();
  await client.query('BEGIN');
  await client.query('SELECT pg_current_xact_id()');
  return async () => {
    await client.query('COMMIT').finally(() => client.release());
  };
}

describe('funds across schedulers with a lagging projection', () => {
  it('two schedulers never spend past an organization\'s funds, and the videos it cannot pay for pause', async () => {
    const deposit = parseUsd('0.945')!;
    const org = await service.organization({ usd: '0.945' });
    // Each track needs a day's cost available: 40 one-day videos fit exactly, leaving 23 snapshots'
    // worth. Half of them start half an hour later, so that their slots fall due in other sweeps
    // than the first half's, with read-model rows that are current.
    for (let i = 0; i < 20; i++) await track(service, org.liveKey, youtubeLink());
    service.clock.advance(HOUR_MS / 2);
    for (let i = 0; i < 20; i++) await track(service, org.liveKey, youtubeLink());
    await service.settle();
    assert.equal(deposit - (await liveSpending(service.db.pool, org.orgId)), 23 * SNAPSHOT_PRICE);

    const a: WorkDeps = { ...service.work, holder: 'scheduler-a', projectionWaitMs: 300 };
    const b: WorkDeps = { ...service.work, holder: 'scheduler-b', projectionWaitMs: 300 };
    const assertWithinFunds = async (when: string) => {
      const spent = await liveSpending(service.db.pool, org.orgId);
      assert.ok(spent <= deposit, `${when}: ${spent} micro-USD of live snapshots on ${deposit} of funds`);
    };

    const release = await stallProjection(service.db.pool);
    try {
      for (let step = 1; step <= 6; step++) {
        service.clock.advance(HOUR_MS / 2);
        // Both at once: one of them leases the organization, the other finds it taken.
        await Promise.all([collectDue(a), collectDue(b)]);
        await assertWithinFunds(`step ${step}, together`);
        // Then one alone, the leases of the last sweep released after its wait timed out.
        await collectDue(step % 2 ? b : a);
        await assertWithinFunds(`step ${step}, alone`);
      }
    } finally {
      await release();
    }

    await service.settle();
    for (let round = 0; round < 3; round++) {
      await collectDue(round % 2 ? a : b);
      await service.settle();
      await assertWithinFunds(`after the projection caught up, round ${round}`);
    }
    const { rows } = await service.db.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM rm.videos WHERE org_id = $1 GROUP BY status ORDER BY status`,
      [org.orgId],
    );
    const paused = rows.find((r) => r.status === 'paused')?.n ?? 0;
    assert.ok(paused > 0, `no video paused: ${JSON.stringify(rows)}`);
    // Every snapshot the funds could pay for was taken, and no more.
    assert.equal(await liveSpending(service.db.pool, org.orgId), deposit);
  });
});
