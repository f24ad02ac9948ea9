// A rebuild replays the log into fresh tables and swaps them in: the result is equal, row
// for row, to the read models it replaces, a rebuild killed halfway finishes when started
// again, and the live projector carries on from the swapped-in checkpoints.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue, chargeUsage, completeEnded, resumeFunded } from '../../src/collect/work.ts';
import { deposit, revokeKey } from '../../src/commands/account-commands.ts';
import { createAlert, deleteAlert } from '../../src/commands/alert-commands.ts';
import { inviteMember, joinMember, removeMember } from '../../src/commands/member-commands.ts';
import { videoDecider } from '../../src/commands/deciders.ts';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { handleCommand } from '../../src/commands/handle.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { streamIdOfVideo } from '../../src/domain/video.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { BuildLocked, rebuildReadModels } from '../../projections/rebuild.ts';
import { readModelRows as readModelRowsOf } from '../support/read-models.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { eventsOf, getVideo, track, youtubeLink } from '../collect/rounds.ts';

let service: TestService;
before(async () => {
  // Room for the live service and a rebuild beside it, as the CLI's own pool gives one (scripts/rebuild.ts).
  service = await startTestService({ poolSize: 20 });
});
after(() => service.close());

/** Every row of every read-model table (checkpoints without their timestamps), in a stable order, and their keys and indexes. */
async function readModelRows(): Promise<Record<string, unknown[]>> {
  const result = await readModelRowsOf(service.db.pool);
  // A build in the database sets keys and indexes aside while it fills the tables: all come back.
  const indexes = await service.db.pool.query(`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname`, [READ_SCHEMA]);
  result.indexes = indexes.rows;
  const constraints = await service.db.pool.query(
    `SELECT conrelid::regclass::text AS table, conname, pg_get_constraintdef(c.oid) AS definition FROM pg_constraint c
     WHERE connamespace = $1::regnamespace ORDER BY conname`,
    [READ_SCHEMA],
  );
  result.constraints = constraints.rows;
  return result;
}

/**
 * Every event a read model reads: snapshots, failures and an error, a test-mode video, charges,
 * a stop, a cancellation, members, a revoked key, alerts, an organization whose 0.4 USD pays for 26 snapshots of its two videos (paused in hour
 * 12, resumed after a deposit), metadata the platform changed to text that JSON must escape, and
 * completion.
 */
async function someHistory(): Promise<{ apiKey: string; videos: string[] }> {
  const org = await service.organization({ usd: '5' });
  const other = await service.organization({ usd: '2', plan: 'pro' });
  const poor = await service.organization({ usd: '0.4' });
  const videos = [
    await track(service, org.liveKey, youtubeLink(), 1),
    await track(service, org.liveKey, youtubeLink('410'), 2),
    await track(service, org.testKey, youtubeLink(), 1),
    await track(service, other.liveKey, youtubeLink(), 3),
    await track(service, poor.liveKey, youtubeLink(), 1),
    await track(service, poor.liveKey, youtubeLink(), 1),
  ];
  for (let hour = 1; hour <= 14; hour++) {
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    if (hour % 3 === 0) await chargeUsage(service.work);
  }
  await handleCommand(service.store, streamIdOfVideo(videos[0]!), videoDecider, {
    type: 'RecordSnapshot',
    slot: 15,
    now: service.clock.now(),
    snapshot: {
      snapshotId: 'changed-metadata',
      provider: 'test',
      metrics: { views: '12', likes: '3' },
      metadata: { title: 'A "quoted" \\ back\\slash\ttab\nline \u2028 é 🎬', creator: '\u0001control', description: '' },
    },
  });
  await deposit(service.store, service.clock, poor.orgId, parseUsd('1')!, 'top-up');
  await service.settle();
  await resumeFunded(service.work);
  await service.app.inject({ method: 'POST', url: `/api/v1/videos/${videos[3]}/stop`, headers: { 'x-api-key': other.liveKey } });
  await cancelVideo(service.store, service.clock, videos[2]!);
  // What the dashboard and the alerts show: members who joined, left or are invited, a revoked
  // key, alerts kept and deleted.
  const invited = await inviteMember(service.store, service.clock, service.clock, { orgId: org.orgId, email: 'a@example.test', role: 'member', by: 'owner' });
  await inviteMember(service.store, service.clock, service.clock, { orgId: org.orgId, email: 'b@example.test', role: 'owner', by: 'owner' });
  await joinMember(service.store, service.clock, service.clock, { orgId: org.orgId, memberId: invited.memberId, token: invited.token });
  await removeMember(service.store, service.clock, { orgId: org.orgId, memberId: invited.memberId, by: 'owner' });
  await revokeKey(service.store, service.clock, other.orgId, other.testKeyId);
  await createAlert(service.store, service.clock, { orgId: org.orgId, mode: 'live', videoId: videos[0]!, metric: 'views', condition: { crosses: '1000' } });
  const deleted = await createAlert(service.store, service.clock, { orgId: org.orgId, mode: 'live', videoId: videos[1]!, metric: 'likes', condition: { grows_per_hour: '5' } });
  await deleteAlert(service.store, service.clock, org.orgId, deleted.alertId);
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

  for (const type of ['VideoPaused', 'VideoResumed', 'VideoErrored', 'VideoCancelled', 'VideoCompleted', 'CollectionFailed', 'UsageCharged', 'MemberJoined', 'MemberRemoved', 'ApiKeyRevoked', 'MetricAlertDeleted']) {
    assert.ok((await eventsOf(service, type)).length > 0, `the history holds a ${type}`);
  }
  assert.ok((await eventsOf(service, 'SnapshotRecorded')).some((e) => e.metadata), 'the history holds changed metadata');

  // The log lies in the read models' database (the service's store on the service's pool):
  // every read model is made there, none page by page.
  const replayed: string[] = [];
  const result = await rebuildReadModels(service.store, service.work.pool, { projections, liveSchema: READ_SCHEMA, batchSize: 7, replay: { onReplayed: (name) => replayed.push(name) } });
  assert.deepEqual(replayed.sort(), projections.map((p) => p.name).sort());
  assert.equal(result.events, await service.store.countEvents(), 'the whole log was replayed');
  assert.deepEqual(await readModelRows(), before);

  // And page by page (as on EventStoreDB, where the log is elsewhere): the same rows again.
  const elsewhere = Object.assign(Object.create(service.store), { logInDatabase: undefined });
  const paged = await rebuildReadModels(elsewhere, service.work.pool, { projections, liveSchema: READ_SCHEMA, batchSize: 7, replay: { onReplayed: () => assert.fail('replayed in the database') } });
  assert.equal(paged.events, result.events);
  assert.deepEqual(await readModelRows(), before);

  // The live runner notices the swapped-in checkpoints, starts again from them and keeps projecting.
  service.clock.advance(HOUR_MS);
  await track(service, apiKey, youtubeLink(), 1);
  await service.settle();
  assert.equal((await getVideo(service, apiKey, videos[0]!)).status, 'completed');
  const { rows } = await service.db.pool.query(`SELECT count(*)::int AS n FROM ${READ_SCHEMA}.videos`);
  assert.equal(rows[0].n, 7);
});

test('what is appended while a rebuild builds is in the read models it swaps in, with no later event needed', async () => {
  const { apiKey } = await someHistory();
  let tracked = '';
  let live: Record<string, unknown[]> = {};
  await rebuildReadModels(service.store, service.work.pool, {
    projections,
    liveSchema: READ_SCHEMA,
    // The log as it was at the start is built; the live projector applies a track meanwhile.
    onBuilt: async () => {
      tracked = await track(service, apiKey, youtubeLink(), 1);
      await service.settle();
      live = await readModelRows();
    },
  });
  assert.ok((live.videos as Array<{ video_id: string }>).some((v) => v.video_id === tracked), 'the live read models held the video tracked during the build');
  // Nothing was appended after the swap: the live projector has had no page to look at its checkpoints with.
  assert.deepEqual(await readModelRows(), live);
  assert.equal((await getVideo(service, apiKey, tracked)).status, 'monitoring');
});

test('a second rebuild is refused from the first one\'s start to the end of its swap', async () => {
  await someHistory();
  let second = 'not run';
  await rebuildReadModels(service.store, service.work.pool, {
    projections,
    liveSchema: READ_SCHEMA,
    // Built, not yet swapped: the build's own lock is already released here.
    onBuilt: async () => {
      second = await rebuildReadModels(service.store, service.work.pool, { projections, liveSchema: READ_SCHEMA }).then(
        () => 'ran',
        (error: unknown) => (error instanceof BuildLocked ? 'refused' : `failed: ${(error as Error).message}`),
      );
    },
  });
  assert.equal(second, 'refused');
  await assert.doesNotReject(rebuildReadModels(service.store, service.work.pool, { projections, liveSchema: READ_SCHEMA }), 'once the first has swapped in, a rebuild runs');
});

test('a rebuild given one projection twice is refused before it builds anything', async () => {
  const videos = projections.find((p) => p.name === 'videos')!;
  await assert.rejects(
    rebuildReadModels(service.store, service.work.pool, { projections: [videos, videos], liveSchema: READ_SCHEMA, onProgress: () => assert.fail('it built') }),
    /refusing to rebuild: videos named more than once/,
  );
  const { rows } = await service.db.pool.query(`SELECT to_regnamespace('${READ_SCHEMA}_rebuild') IS NULL AS none`);
  assert.equal(rows[0].none, true, 'no build schema was made');
});

test('what is appended while a read model is replayed (its long transaction open) is projected live before the build ends', async () => {
  const { apiKey } = await someHistory();
  let tracked = '';
  let projectedDuringReplay: boolean | Error = false;
  let replaying = 0;
  await rebuildReadModels(service.store, service.work.pool, {
    projections,
    liveSchema: READ_SCHEMA,
    replay: {
      // The first read model's replay has begun: its transaction is open and holds an id.
      onReplaying: async () => {
        if (replaying++ > 0) return;
        try {
          tracked = await track(service, apiKey, youtubeLink(), 1);
          await service.settle(); // the live projector passed it (a 10 s deadline)
          projectedDuringReplay = true;
        } catch (error) {
          projectedDuringReplay = error as Error;
        }
      },
    },
  });
  assert.ok(replaying > 0, 'read models were replayed in the database');
  assert.equal(projectedDuringReplay, true, 'the live projector applied the append while the replay transaction was open');
  assert.equal((await getVideo(service, apiKey, tracked)).status, 'monitoring');
  const { rows } = await service.db.pool.query(`SELECT count(*)::int AS n FROM es.horizon_exempt`);
  assert.equal(rows[0].n, 0, 'every exemption ended with its transaction');
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
