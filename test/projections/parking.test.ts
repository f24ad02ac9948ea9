// One event the read models cannot hold (a count above bigint, appended straight to the log as a
// service from before the domain refused such counts would have) must not freeze them: it is
// parked with its error, counted in /metrics, listed by `admin parked list`, and applied by
// `admin parked retry` once the data is fixed; every later event is projected meanwhile.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { track, youtubeLink } from '../collect/rounds.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { projections } from '../../projections/index.ts';
import { buildBeside } from '../../projections/runner.ts';

const root = path.resolve(import.meta.dirname, '../..');
const TOO_BIG = '99999999999999999999';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

function admin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: service.db.url }, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** A tracked video and, appended straight to its stream, a snapshot with a count above bigint. */
async function trackWithTooBigSnapshot(snapshotId: string) {
  const org = await service.organization({ usd: '5' });
  const videoId = await track(service, org.testKey, youtubeLink(), 1);
  const [tracked] = await service.store.readStream(`video-${videoId}`);
  const { orgId, mode } = tracked!.data as { orgId: string; mode: string };
  const bad = await service.store.append(`video-${videoId}`, [{
    type: 'SnapshotRecorded',
    data: {
      videoId, orgId, mode, slot: 1, snapshotId, snapshotTime: '2026-03-01T01:00:00.000Z', provider: 'simulator',
      metrics: { views: TOO_BIG, likes: '5', comments: '1', shares: '0' }, price: 0,
    },
  }], 'any');
  return { videoId, bad };
}

test('an event a projection cannot apply is parked, counted and listed, later events are projected, and a retry applies it once fixed', async () => {
  const { videoId, bad } = await trackWithTooBigSnapshot('snap_toobig');
  // A later event: projected although the one before it cannot be.
  const later = await service.organization({ usd: '1' });
  await service.settle();
  assert.equal((await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': later.liveKey } })).statusCode, 200);

  // Parked for the snapshots read model only: the video still counts the snapshot.
  const { rows: parked } = await service.db.pool.query(`SELECT projection, type, stream_id, error FROM rm.parked_events`);
  assert.equal(parked.length, 1, JSON.stringify(parked));
  assert.equal(parked[0].projection, 'snapshots');
  assert.equal(parked[0].type, 'SnapshotRecorded');
  assert.equal(parked[0].stream_id, `video-${videoId}`);
  assert.match(parked[0].error, /out of range.*SQLSTATE 22003/);
  const { rows: video } = await service.db.pool.query(`SELECT snapshot_count FROM rm.video_schedule WHERE video_id = $1`, [videoId]);
  assert.equal(video[0].snapshot_count, 2);

  const metrics = await service.app.inject({ url: '/metrics' });
  assert.match(metrics.body, /vidtrack_projection_parked_events\{projection="snapshots"\} 1/);

  const list = await admin('parked', 'list');
  assert.equal(list.code, 0, list.stderr);
  const [shown] = JSON.parse(list.stdout).parked;
  const [event] = (await service.store.readStream(`video-${videoId}`)).slice(-1);
  assert.equal(shown.event_id, event!.id);
  assert.equal(shown.position, `${bad.position.commit}/${bad.position.prepare}`);
  assert.equal(shown.projection, 'snapshots');
  assert.ok(shown.parked_at && shown.error);

  // Retried as it is, it fails again and stays parked.
  const again = await admin('parked', 'retry', '--all');
  assert.equal(again.code, 1);
  assert.equal(JSON.parse(again.stdout).still_parked.length, 1);

  // The operator fixes the datum; the retry applies it through the projection.
  await service.db.pool.query(`UPDATE es.events SET data = jsonb_set(data::jsonb, '{metrics,views}', '"12345"')::json WHERE event_id = $1`, [event!.id]);
  const retried = await admin('parked', 'retry', '--event', event!.id);
  assert.equal(retried.code, 0, retried.stderr + retried.stdout);
  assert.deepEqual(JSON.parse(retried.stdout).applied, [{ event_id: event!.id, projection: 'snapshots' }]);
  const { rows: snapshot } = await service.db.pool.query(`SELECT views FROM rm.snapshots WHERE video_id = $1 AND slot = 1`, [videoId]);
  assert.deepEqual(snapshot, [{ views: '12345' }]);
  assert.equal(JSON.parse((await admin('parked', 'list')).stdout).parked.length, 0);
  assert.match((await service.app.inject({ url: '/metrics' })).body, /vidtrack_projection_parked_events\{projection="snapshots"\} 0|^(?![\s\S]*vidtrack_projection_parked_events\{)/);
});

test('a build beside the live tables (one connection per read model) parks what one read model cannot apply, and the others apply it', async () => {
  const { videoId, bad } = await trackWithTooBigSnapshot('snap_toobig_build');
  const later = await service.organization({ usd: '1' });
  const build = 'rm_parking_build';
  const parked: Array<{ projection: string; eventId: string }> = [];
  try {
    await buildBeside(service.store, service.db.pool, projections, build, { onParked: (p) => parked.push({ projection: p.projection, eventId: p.event.id }) });
    const [badEvent] = (await service.store.readStream(`video-${videoId}`)).slice(-1);
    assert.deepEqual(badEvent!.position, bad.position);
    assert.deepEqual(parked, [{ projection: 'snapshots', eventId: badEvent!.id }]);
    const { rows: video } = await service.db.pool.query(`SELECT snapshot_count FROM ${build}.video_schedule WHERE video_id = $1`, [videoId]);
    assert.deepEqual(video, [{ snapshot_count: 2 }]);
    const { rows: usage } = await service.db.pool.query(`SELECT org_id FROM ${build}.usage WHERE org_id = $1`, [later.orgId]);
    assert.equal(usage.length, 1, 'an organization opened after the parked event is in the built usage read model');
  } finally {
    await service.db.pool.query(`DROP SCHEMA IF EXISTS ${build} CASCADE`);
  }
});

test('a second snapshot of a slot, appended straight to the log, is parked by the snapshots read model, which keeps the first', async () => {
  const org = await service.organization({ usd: '5' });
  const videoId = await track(service, org.testKey, youtubeLink(), 1);
  await service.settle();
  const { rows: first } = await service.db.pool.query(`SELECT slot, snapshot_id FROM rm.snapshots WHERE video_id = $1`, [videoId]);
  assert.equal(first.length, 1, 'the tracking recorded the first slot');
  const events = await service.store.readStream(`video-${videoId}`);
  const recorded = events.find((e) => e.type === 'SnapshotRecorded')!;
  const again = await service.store.append(`video-${videoId}`, [{ type: 'SnapshotRecorded', data: { ...(recorded.data as object), snapshotId: 'snap_second_of_slot' } }], 'any');
  const later = await service.organization({ usd: '1' });
  await service.settle();

  const { rows: parked } = await service.db.pool.query(`SELECT projection, error FROM rm.parked_events WHERE stream_id = $1`, [`video-${videoId}`]);
  assert.equal(parked.length, 1, JSON.stringify(parked));
  assert.equal(parked[0].projection, 'snapshots');
  assert.match(parked[0].error, /SQLSTATE 23505/);
  const [event] = (await service.store.readStream(`video-${videoId}`)).slice(-1);
  assert.deepEqual(event!.position, again.position);
  const { rows: kept } = await service.db.pool.query(`SELECT slot, snapshot_id FROM rm.snapshots WHERE video_id = $1`, [videoId]);
  assert.deepEqual(kept, first, 'the snapshot of the slot is the first one');
  assert.equal((await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': later.liveKey } })).statusCode, 200, 'later events are projected');
});
