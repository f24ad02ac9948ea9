// A projection applies each stream's events in order, or not yet: once an event of a stream is
// parked for a projection, the later events of that stream are parked behind it for that
// projection, and a retry applies them in log order once the data is mended. Applied out of
// order, a later snapshot moved the video's revision past the parked one, which its retry then
// left uncounted, and a revocation found no key to revoke, which its retry then issued unrevoked.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { comparePositions, type Position } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { projections } from '../../projections/index.ts';
import { retryParked } from '../../projections/parking.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { within } from '../support/wait.ts';

const NOT_A_TIME = 'not a time';
const at = (hour: number) => new Date(Date.UTC(2026, 2, 1, hour)).toISOString();

async function setup(t: TestContext) {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  const errors: unknown[] = [];
  const runner = new ProjectionRunner(store, db.pool, projections, { schema: 'rm', onParked: () => undefined });
  t.after(() => runner.stop());
  /** Resolves once every read model has passed `position`. */
  const passed = (what: string, position: Position) =>
    within(`the projector to pass ${what} (errors: ${errors.map(String).join('; ') || 'none'})`, new Promise<void>((resolve) => {
      const subscription = runner.position$.subscribe((p) => {
        if (p && comparePositions(p, position) >= 0) {
          queueMicrotask(() => subscription.unsubscribe());
          resolve();
        }
      });
    }), 30_000);
  return { db, store, runner, passed, start: () => runner.start((error) => errors.push(error)) };
}

function videoTracked(videoId: string) {
  return {
    type: 'VideoTracked',
    data: {
      videoId, jobId: `job_${videoId}`, orgId: 'org_v', keyId: 'key_v', mode: 'live', videoLink: `https://youtu.be/${videoId}`,
      platform: 'youtube', platformId: videoId, durationDays: 1, startedAt: at(0), metadata: { title: 't' },
    },
  };
}

function snapshotRecorded(videoId: string, slot: number, snapshotTime = at(slot)) {
  return {
    type: 'SnapshotRecorded',
    data: {
      videoId, orgId: 'org_v', mode: 'live', slot, snapshotId: `snap_${videoId}_${slot}`, snapshotTime,
      provider: 'simulator', metrics: { views: '10', likes: '1', comments: '0', shares: '0' }, price: 15000,
    },
  };
}

/** What an operator does before a retry: the datum the read models could not take, fixed in the log. */
async function mend(db: TestDatabase, eventId: string, field: string, value: string): Promise<void> {
  await db.pool.query(`UPDATE es.events SET data = jsonb_set(data::jsonb, $2::text[], to_jsonb($3::text))::json WHERE event_id = $1`, [eventId, [field], value]);
}

async function parkedRows(db: TestDatabase, projection: string) {
  const { rows } = await db.pool.query(`SELECT event_id, error FROM rm.parked_events WHERE projection = $1 ORDER BY commit_position, prepare_position`, [projection]);
  return rows as Array<{ event_id: string; error: string }>;
}

test('a snapshot after a parked one of its video is parked behind it, and the retry counts both', async (t) => {
  const { db, store, passed, start } = await setup(t);
  await start();
  await store.append('video-vid_a', [videoTracked('vid_a'), snapshotRecorded('vid_a', 0)], 'no_stream');
  const bad = await store.append('video-vid_a', [snapshotRecorded('vid_a', 1, NOT_A_TIME)], 1n);
  // Parked on a page of its own: the later snapshot meets it in the parked table, not in its page.
  await passed('the snapshot it cannot apply', bad.position);
  const [badEvent] = (await store.readStream('video-vid_a')).slice(-1);
  assert.deepEqual((await parkedRows(db, 'videos')).map((r) => r.event_id), [badEvent!.id]);

  const later = await store.append('video-vid_a', [snapshotRecorded('vid_a', 2)], 2n);
  const other = await store.append('video-vid_b', [videoTracked('vid_b'), snapshotRecorded('vid_b', 0)], 'no_stream');
  await passed('the later snapshot and another video', comparePositions(later.position, other.position) > 0 ? later.position : other.position);
  const [laterEvent] = (await store.readStream('video-vid_a')).slice(-1);
  const parked = await parkedRows(db, 'videos');
  assert.deepEqual(parked.map((r) => r.event_id), [badEvent!.id, laterEvent!.id]);
  assert.equal(parked[1]!.error, `waits behind parked event ${badEvent!.id}`);
  const schedule = async (videoId: string) =>
    (await db.pool.query(`SELECT snapshot_count, (SELECT count(*)::int FROM rm.snapshots s WHERE s.video_id = v.video_id) AS snapshots
       FROM rm.video_schedule v WHERE video_id = $1`, [videoId])).rows[0];
  assert.deepEqual(await schedule('vid_a'), { snapshot_count: 1, snapshots: 1 }, 'neither snapshot after the parked one is applied');
  assert.deepEqual(await schedule('vid_b'), { snapshot_count: 1, snapshots: 1 }, 'another video goes on');

  await mend(db, badEvent!.id, 'snapshotTime', at(1));
  const outcome = await retryParked(store, db.pool, projections, 'rm');
  assert.deepEqual(outcome.still_parked, []);
  const videos = outcome.applied.filter((a) => a.projection === 'videos').map((a) => a.event_id);
  assert.deepEqual(videos, [badEvent!.id, laterEvent!.id], 'applied in log order');
  assert.deepEqual(await schedule('vid_a'), { snapshot_count: 3, snapshots: 3 });
  assert.equal((await db.pool.query(`SELECT count(*)::int AS n FROM rm.parked_events`)).rows[0].n, 0);

  // Nothing parked any more: the video's next snapshot is applied as usual.
  const next = await store.append('video-vid_a', [snapshotRecorded('vid_a', 3)], 3n);
  await passed('the next snapshot', next.position);
  assert.deepEqual(await schedule('vid_a'), { snapshot_count: 4, snapshots: 4 });
});

test('a snapshot with a time the read models cannot take is parked also when its page holds earlier events of its video', async (t) => {
  const { db, store, passed, start } = await setup(t);
  // Appended before the projector starts: its first page holds all three.
  const { position } = await store.append('video-vid_a', [videoTracked('vid_a'), snapshotRecorded('vid_a', 0), snapshotRecorded('vid_a', 1, NOT_A_TIME)], 'no_stream');
  await start();
  await passed('the snapshot it cannot apply', position);
  const [, , badEvent] = await store.readStream('video-vid_a');
  const parked = await parkedRows(db, 'videos');
  assert.deepEqual(parked.map((r) => r.event_id), [badEvent!.id], 'parked as it is on a page of its own');
  assert.match(parked[0]!.error, /SQLSTATE 22007/);
});

const keyIssued = { type: 'ApiKeyIssued', data: { orgId: 'org_k', keyId: 'key_k', name: 'k', mode: 'live', keyHash: 'hash_k', at: NOT_A_TIME } };
const keyRevoked = { type: 'ApiKeyRevoked', data: { orgId: 'org_k', keyId: 'key_k', at: at(2) } };
const opened = { type: 'OrganizationOpened', data: { orgId: 'org_k', name: 'K', email: 'k@example.com', plan: 'free', rateLimit: null, at: at(0) } };

/** An organization whose key is issued with a time the read models cannot take, then revoked, all in one page. */
async function revokedAfterParkedIssue(t: TestContext) {
  const setupDone = await setup(t);
  const { store, passed, start } = setupDone;
  const last = await store.append('account-org_k', [opened, keyIssued, keyRevoked], 'no_stream');
  await start();
  await passed('the revocation', last.position);
  const [, issued, revoked] = await store.readStream('account-org_k');
  return { ...setupDone, issued: issued!.id, revoked: revoked!.id };
}

test('a revocation after a parked issue of its key is parked behind it, and the retry leaves the key revoked', async (t) => {
  const { db, store, issued, revoked } = await revokedAfterParkedIssue(t);
  const parked = await parkedRows(db, 'api_keys');
  assert.deepEqual(parked.map((r) => r.event_id), [issued, revoked]);
  assert.match(parked[0]!.error, /SQLSTATE 22007/);
  assert.equal(parked[1]!.error, `waits behind parked event ${issued}`);
  assert.deepEqual((await db.pool.query(`SELECT key_id FROM rm.api_keys`)).rows, []);
  assert.deepEqual((await db.pool.query(`SELECT org_id FROM rm.organizations`)).rows, [{ org_id: 'org_k' }], 'the events before the parked one are applied');

  await mend(db, issued, 'at', at(1));
  const outcome = await retryParked(store, db.pool, projections, 'rm');
  assert.deepEqual(outcome.still_parked, []);
  assert.deepEqual(outcome.applied.filter((a) => a.projection === 'api_keys').map((a) => a.event_id), [issued, revoked]);
  assert.deepEqual((await db.pool.query(`SELECT key_id, revoked FROM rm.api_keys`)).rows, [{ key_id: 'key_k', revoked: true }]);
});

test('a retry whose first event fails again leaves the later ones of its stream parked behind it, untried', async (t) => {
  const { db, store, issued, revoked } = await revokedAfterParkedIssue(t);
  const before = await parkedRows(db, 'api_keys');

  const again = await retryParked(store, db.pool, projections, 'rm');
  assert.deepEqual(again.applied.filter((a) => a.projection === 'api_keys'), []);
  const stillParked = again.still_parked.filter((p) => p.projection === 'api_keys');
  assert.deepEqual(stillParked.map((p) => p.event_id), [issued, revoked]);
  assert.match(stillParked[0]!.error, /SQLSTATE 22007/);
  assert.equal(stillParked[1]!.error, `waits behind parked event ${issued}`);
  assert.deepEqual((await parkedRows(db, 'api_keys')).map((r) => r.event_id), before.map((r) => r.event_id), 'both stay parked');
  assert.deepEqual((await db.pool.query(`SELECT key_id FROM rm.api_keys`)).rows, []);

  // The later one alone is not applied ahead of the one it waits behind.
  const alone = await retryParked(store, db.pool, projections, 'rm', revoked);
  assert.deepEqual(alone, { applied: [], still_parked: [{ event_id: revoked, projection: 'api_keys', error: `waits behind parked event ${issued}` }] });

  // Retrying the one at fault, once mended, applies those behind it too.
  await mend(db, issued, 'at', at(1));
  const retried = await retryParked(store, db.pool, projections, 'rm', issued);
  assert.deepEqual(retried.still_parked, []);
  assert.deepEqual(retried.applied.filter((a) => a.projection === 'api_keys').map((a) => a.event_id), [issued, revoked]);
  assert.deepEqual((await db.pool.query(`SELECT key_id, revoked FROM rm.api_keys`)).rows, [{ key_id: 'key_k', revoked: true }]);
});
