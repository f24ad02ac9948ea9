// A rebuild replays the log into fresh tables and swaps them in: the result is equal, row
// for row, to the read models it replaces, a rebuild killed halfway finishes when started
// again, and the live projector carries on from the swapped-in checkpoints.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue, chargeUsage, completeEnded } from '../../src/collect/work.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { rebuildReadModels } from '../../projections/rebuild.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { getVideo, track, youtubeLink } from '../collect/rounds.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

/** Every row of every read-model table (checkpoints without their timestamps), in a stable order. */
async function readModelRows(): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const table of projections.flatMap((p) => p.tables)) {
    const { rows } = await service.db.pool.query(`SELECT * FROM ${READ_SCHEMA}.${table} t ORDER BY t::text`);
    result[table] = rows;
  }
  const { rows } = await service.db.pool.query(`SELECT projection, commit_position, prepare_position FROM ${READ_SCHEMA}.checkpoints ORDER BY projection`);
  result.checkpoints = rows;
  return result;
}

async function someHistory(): Promise<{ apiKey: string; videos: string[] }> {
  const org = await service.organization({ usd: '5' });
  const other = await service.organization({ usd: '2', plan: 'pro' });
  const videos = [
    await track(service, org.liveKey, youtubeLink(), 1),
    await track(service, org.liveKey, youtubeLink('410'), 2),
    await track(service, org.testKey, youtubeLink(), 1),
    await track(service, other.liveKey, youtubeLink(), 3),
  ];
  for (let hour = 1; hour <= 6; hour++) {
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    if (hour === 3) await chargeUsage(service.work);
  }
  await service.app.inject({ method: 'POST', url: `/api/v1/videos/${videos[3]}/stop`, headers: { 'x-api-key': other.liveKey } });
  service.clock.advance(20 * HOUR_MS);
  // A late scheduler catches up every missed slot before the videos complete.
  while ((await collectDue(service.work)).claimed > 0);
  await completeEnded(service.work);
  await chargeUsage(service.work);
  await service.settle();
  return { apiKey: org.liveKey, videos };
}

test('a rebuild is equal, row for row, to the read models it replaces, and the live projector carries on', async () => {
  const { apiKey, videos } = await someHistory();
  const before = await readModelRows();
  assert.ok((before.snapshots as unknown[]).length > 15);

  const result = await rebuildReadModels(service.store, service.db.pool, { projections, liveSchema: READ_SCHEMA, batchSize: 7 });
  assert.equal(result.events, await service.store.countEvents(), 'the whole log was replayed');
  assert.deepEqual(await readModelRows(), before);

  // The live runner notices the swapped-in checkpoints, starts again from them and keeps projecting.
  service.clock.advance(HOUR_MS);
  await track(service, apiKey, youtubeLink(), 1);
  await service.settle();
  assert.equal((await getVideo(service, apiKey, videos[0]!)).status, 'completed');
  const { rows } = await service.db.pool.query(`SELECT count(*)::int AS n FROM ${READ_SCHEMA}.videos`);
  assert.equal(rows[0].n, 5);
});

test('a rebuild killed halfway finishes when started again, and one projection can be rebuilt alone', async () => {
  await someHistory();
  const before = await readModelRows();

  // Half a rebuild: a runner into the build schema, stopped (as if killed) after a few small batches.
  let pages = 0;
  const half = new ProjectionRunner(service.store, service.db.pool, projections, { schema: 'rm_rebuild', batchSize: 5, onPage: () => pages++ });
  await half.start((error) => assert.fail(String(error)));
  while (pages < 4) await new Promise((r) => setTimeout(r, 5));
  await half.stop();
  const { rows } = await service.db.pool.query(`SELECT count(*)::int AS n FROM rm_rebuild.checkpoints`);
  assert.ok(rows[0].n > 0, 'the half-done rebuild left its checkpoints');

  await rebuildReadModels(service.store, service.db.pool, { projections, liveSchema: READ_SCHEMA });
  assert.deepEqual(await readModelRows(), before);

  const videosOnly = projections.filter((p) => p.name === 'videos');
  await rebuildReadModels(service.store, service.db.pool, { projections: videosOnly, liveSchema: READ_SCHEMA });
  assert.deepEqual(await readModelRows(), before);
});
