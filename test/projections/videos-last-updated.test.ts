// A video's last_updated is the latest time its events carry, whatever their order in the
// stream and however they fell into pages: the live projector and a rebuild agree on it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { comparePositions } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { rebuildReadModels } from '../../projections/rebuild.ts';
import { createTestDatabase } from '../support/db.ts';
import { until } from '../support/wait.ts';

const video = { videoId: 'v1', orgId: 'org_1', mode: 'live' };
const STARTED = '2026-03-01T00:00:00.000Z';
const SNAPSHOT = '2026-03-01T01:00:05.000Z';
/** Decided before the snapshot, appended after it (a pause retried after a conflict). */
const PAUSED = '2026-03-01T01:00:04.000Z';

test('last_updated is the latest time of a video whose events are not in time order, live (one page) and rebuilt alike', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  // Room for a rebuild's connection per read model.
  const pool = createPool(db.url, { max: 20, onError: () => undefined });
  t.after(() => pool.end());
  const store = new PostgresEventStore(pool);
  t.after(() => store.close());

  // Appended before the projector starts: its first page holds all of them.
  await store.append('video-v1', [
    { type: 'VideoTracked', data: { ...video, jobId: 'job_v1', keyId: 'key_1', videoLink: 'https://youtu.be/abc', platform: 'youtube', platformId: 'abc', durationDays: 1, startedAt: STARTED, metadata: { title: 't', creator: 'c', description: '' } } },
  ], 'no_stream');
  const { position } = await store.append('video-v1', [
    { type: 'SnapshotRecorded', data: { ...video, slot: 0, snapshotId: 's0', snapshotTime: SNAPSHOT, provider: 'test', metrics: { views: '1' }, price: 20000 } },
    { type: 'VideoPaused', data: { ...video, at: PAUSED } },
  ], 0n);

  const runner = new ProjectionRunner(store, pool, projections, { schema: READ_SCHEMA });
  t.after(() => runner.stop());
  await runner.start((error) => assert.fail(String(error)));
  await until('the projector to pass the pause', () => {
    const at = runner.position$.value;
    return at && comparePositions(at, position) >= 0 ? true : undefined;
  }, 15_000);
  const lastUpdated = async () =>
    (await db.pool.query<{ last_updated: Date }>(`SELECT last_updated FROM ${READ_SCHEMA}.video_schedule WHERE video_id = 'v1'`)).rows[0]?.last_updated.toISOString();
  assert.equal(await lastUpdated(), SNAPSHOT, 'projected live');
  await runner.stop();

  await rebuildReadModels(store, pool, { projections, liveSchema: READ_SCHEMA });
  assert.equal(await lastUpdated(), SNAPSHOT, 'rebuilt');
});
