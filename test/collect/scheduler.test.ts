// The Bree scheduler started for real, on a clock 36 000 times faster than the wall (an hour
// of service time every 100 ms): a 1-day tracking runs its course in a few seconds.
import assert from 'node:assert/strict';
import type Bree from 'bree';
import { afterEach, beforeEach, it } from 'node:test';
import { HOUR_MS, scaledClock, type Clock } from '../../src/clock.ts';
import { Scheduler, type JobName } from '../../src/collect/scheduler.ts';
import type { WorkDeps } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { eventsOf, getUsage, recordedSlots, track, youtubeLink } from './rounds.ts';
import { collectorsCalling } from '../support/collectors.ts';

const TIME_SCALE = 36_000;

let service: TestService;
let clock: Clock;
let deps: WorkDeps;
let scheduler: Scheduler | null = null;
const errors: Array<[JobName, unknown]> = [];
const rounds: Array<{ job: JobName; at: number }> = [];

beforeEach(async () => {
  errors.length = 0;
  rounds.length = 0;
  service = await startTestService();
  clock = scaledClock(TIME_SCALE);
  deps = { ...service.work, clock };
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = null;
  await service.close();
});

function newScheduler(): Scheduler {
  scheduler = new Scheduler(deps, {
    timeScale: TIME_SCALE,
    onError: (job, error) => errors.push([job, error]),
    onRound: (job) => rounds.push({ job, at: Date.now() }),
  });
  return scheduler;
}

/** Tracks through the API at the scaled clock's present (the app itself runs on the ManualClock). */
async function trackNow(apiKey: string, link: string, days = 1): Promise<string> {
  service.clock.set(clock.now());
  return track(service, apiKey, link, days);
}

async function statusOf(videoId: string): Promise<string> {
  const { rows } = await service.db.pool.query(`SELECT status FROM rm.videos WHERE video_id = $1`, [videoId]);
  return rows[0]?.status;
}

async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}; errors: ${errors.map(([j, e]) => `${j}: ${String(e)}`).join('; ')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - started;
}

it('a 1-day video completes by itself with 24 snapshots, charged, within a few seconds', async () => {
  const org = await service.organization({ usd: '1' });
  await newScheduler().start();
  const videos = [await trackNow(org.liveKey, youtubeLink()), await trackNow(org.liveKey, youtubeLink())];

  const took = await eventually('completion', async () => (await Promise.all(videos.map(statusOf))).every((s) => s === 'completed'), 15_000);
  assert.ok(took < 10_000, `took ${took} ms`);
  for (const id of videos) {
    const slots = await recordedSlots(service, id);
    assert.deepEqual(slots, Array.from({ length: 24 }, (_, i) => i), `video ${id}`);
    const [completed] = await eventsOf(service, 'VideoCompleted', id);
    assert.equal(completed!.reason, 'period_ended');
  }
  await eventually('the charge', async () => (await getUsage(service, org.liveKey)).uncharged_usage_usd === 0, 5_000);
  const usage = await getUsage(service, org.liveKey);
  assert.equal(usage.total_charged_usd, 0.72);
  assert.equal(usage.balance_usd, 0.28);
  assert.deepEqual(errors, []);
  for (const job of ['collect', 'complete', 'resume', 'charge'] as const) assert.ok(rounds.some((r) => r.job === job), `no ${job} round ran`);
});

it('stop() leaves no timers or workers running, and no round starts afterwards', async () => {
  const org = await service.organization({ usd: '5' });
  // Bree's recurring jobs run on safe-timers, which chains plain setTimeout calls carrying
  // its own timer object: catch every one of those made while the scheduler runs.
  const jobTimers: NodeJS.Timeout[] = [];
  const realSetTimeout = globalThis.setTimeout;
  globalThis.setTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const timer = realSetTimeout(callback, ms, ...args);
    if (typeof (args[0] as { fireNow?: unknown } | undefined)?.fireNow === 'function') jobTimers.push(timer);
    return timer;
  }) as typeof setTimeout;
  const s = newScheduler();
  try {
    await s.start();
    await trackNow(org.liveKey, youtubeLink(), 3);
    await eventually('a few rounds', async () => rounds.filter((r) => r.job === 'collect').length >= 3, 5_000);
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
  assert.ok(jobTimers.length >= 4, `${jobTimers.length} job timers seen`);

  await s.stop();
  const stoppedAt = Date.now();
  const isCleared = (timer: NodeJS.Timeout) => (timer as unknown as { _destroyed: boolean })._destroyed;
  assert.equal(jobTimers.filter((t) => !isCleared(t)).length, 0, 'a job timer is still running');
  const bree = (s as unknown as { bree: { workers: Map<string, unknown>; intervals: Map<string, unknown>; timeouts: Map<string, unknown> } }).bree;
  assert.equal(bree.workers.size, 0);
  assert.equal(bree.intervals.size, 0);
  assert.equal(bree.timeouts.size, 0);
  assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'MessagePort' || r === 'Worker').length, 0);

  const snapshots = (await eventsOf(service, 'SnapshotRecorded')).length;
  await new Promise((r) => setTimeout(r, 1_000)); // ten service hours
  assert.deepEqual(
    rounds.filter((r) => r.at > stoppedAt),
    [],
    'a round ran after stop()',
  );
  assert.equal((await eventsOf(service, 'SnapshotRecorded')).length, snapshots);
  assert.deepEqual(errors, []);
});

it('a tick starts no thread, and an idle scheduler runs no rounds while nothing can be due', async () => {
  const org = await service.organization({ usd: '1' });
  const s = newScheduler();
  const runs: unknown[] = [];
  await s.start();
  const bree = (s as unknown as { bree: Bree }).bree;
  bree.on('worker created', (name: string) => runs.push(bree.workers.get(name)));
  const video = await trackNow(org.liveKey, youtubeLink());
  await eventually('completion', async () => (await statusOf(video)) === 'completed', 15_000);
  await eventually('the charge', async () => (await getUsage(service, org.liveKey)).uncharged_usage_usd === 0, 5_000);

  // Nothing is due from now on, for ever: after each job's round on the last change, the
  // scheduler is idle. Measured over 2 s (20 service hours, 10 collect intervals of Bree here).
  const quietFrom = Date.now() + 1_000;
  await new Promise((r) => setTimeout(r, 3_000));
  const idleRounds = rounds.filter((r) => r.at > quietFrom);
  assert.ok(idleRounds.length <= 1, `${idleRounds.length} rounds while idle: ${idleRounds.map((r) => r.job).join(', ')}`);
  assert.ok(runs.length > 20, `only ${runs.length} ticks seen`);
  const { Worker } = await import('node:worker_threads');
  assert.equal(runs.filter((run) => run instanceof Worker).length, 0, 'a tick started a worker thread');
  assert.deepEqual(errors, []);
});

it('a failed round is reported and retried with backoff, before the next tick', async () => {
  // At wall speed the next collect tick is 10 s away: the retry must not wait for it.
  const { createPool } = await import('../../src/db/pool.ts');
  const nowhere = createPool('postgres://vidtrack@127.0.0.1:1/nowhere', { onError: () => undefined });
  const healthy = deps.pool;
  deps = { ...deps, clock: service.clock, pool: nowhere };
  const s = new Scheduler(deps, {
    timeScale: 1,
    onError: (job, error, retryInMs) => {
      errors.push([job, error]);
      retries.push({ job, retryInMs });
      deps.pool = healthy; // the database is back for the retry
    },
    onRound: (job) => rounds.push({ job, at: Date.now() }),
  });
  const retries: Array<{ job: JobName; retryInMs: number | null }> = [];
  scheduler = s;
  try {
    const started = Date.now();
    await s.start();
    await eventually('a collect round after the failure', async () => rounds.some((r) => r.job === 'collect'), 5_000);
    assert.ok(Date.now() - started < 5_000);
    const collectRetries = retries.filter((r) => r.job === 'collect');
    assert.equal(collectRetries.length, 1, JSON.stringify(retries));
    assert.equal(collectRetries[0]!.retryInMs, 1_000);
  } finally {
    await nowhere.end();
  }
});

it('an idle scheduler collects a slot when it falls due, not at the next tick after it', async () => {
  // At wall speed collection ticks every 10 s; the first tick runs at start, before the slot.
  const org = await service.organization({ usd: '1' });
  const dueAt = Date.now() + 1_500;
  // Tracking collects slot 0 at once; slot 1 falls due an hour after the start.
  service.clock.set(new Date(dueAt - HOUR_MS));
  const video = await track(service, org.liveKey, youtubeLink());
  await eventually('the video in the schedule', async () => (await service.db.pool.query(`SELECT 1 FROM rm.video_schedule WHERE video_id = $1`, [video])).rowCount === 1, 5_000);
  deps = { ...deps, clock: scaledClock(1) };
  const s = new Scheduler(deps, {
    timeScale: 1,
    onError: (job, error) => errors.push([job, error]),
    onRound: (job) => rounds.push({ job, at: Date.now() }),
  });
  scheduler = s;
  await s.start();
  await eventually('the first collect round, before the slot', async () => rounds.some((r) => r.job === 'collect'), 5_000);
  assert.deepEqual(await recordedSlots(service, video), [0], 'slot 1 was collected before it fell due');

  // Well before Bree's next collect tick (10 s after the start).
  await eventually('slot 1', async () => (await recordedSlots(service, video)).length === 2, 7_000);
  assert.ok(Date.now() >= dueAt, 'collected before its time');
  assert.deepEqual(errors, []);
});

it('a slow round that fails is reported once, however many ticks arrive while it runs, and retried after 1 s', async () => {
  // At TIME_SCALE=3600 collect ticks every 200 ms of wall time; the round takes 1.5 s to fail
  // (a database that answers slowly, then not at all): some seven ticks arrive meanwhile.
  const healthy = deps.pool;
  const slowlyFailing = {
    query: () => new Promise((_, reject) => setTimeout(() => reject(new Error('the database went away')), 1_500)),
  } as unknown as typeof healthy;
  deps = { ...deps, pool: slowlyFailing };
  const reports: Array<{ job: JobName; retryInMs: number | null; at: number }> = [];
  const s = new Scheduler(deps, {
    timeScale: 3600,
    onError: (job, _error, retryInMs) => {
      reports.push({ job, retryInMs, at: Date.now() });
      errors.push([job, `reported, retry in ${retryInMs} ms`]);
      deps.pool = healthy; // the database is back for the retry
    },
    onRound: (job) => rounds.push({ job, at: Date.now() }),
  });
  scheduler = s;
  await s.start();
  await eventually('a collect round after the failure', async () => rounds.some((r) => r.job === 'collect'), 10_000);
  const collect = reports.filter((r) => r.job === 'collect');
  assert.deepEqual(
    collect.map((r) => r.retryInMs),
    [1_000],
    'the failed round reported more than once',
  );
  const retriedAfter = rounds.find((r) => r.job === 'collect')!.at - collect[0]!.at;
  assert.ok(retriedAfter >= 900 && retriedAfter < 5_000, `retried ${retriedAfter} ms after the failure`);
});

it('stop() ends a collect sweep at its next batch: no platform is asked again, the append under way lands, the leases go back', async () => {
  const org = await service.organization({ usd: '10' });
  const videos: string[] = [];
  for (let i = 0; i < 6; i++) videos.push(await track(service, org.liveKey, youtubeLink()));
  await service.settle();
  let batches = 0;
  let stopping: Promise<void> | undefined;
  // stop() is called while the platform is asked for the first batch (of one video).
  const collectors = collectorsCalling(service.work.collectors, () => {
    if (++batches === 1) stopping = s.stop();
  });
  const s = new Scheduler({ ...service.work, collectors, batchSize: 1 }, { timeScale: 1, onError: (job, error) => errors.push([job, error]) });
  scheduler = s;
  service.clock.advance(HOUR_MS);
  await s.run('collect');
  await stopping;
  assert.equal(batches, 1, 'the platforms were asked for a batch after stop()');
  const slots = await Promise.all(videos.map((id) => recordedSlots(service, id)));
  assert.equal(slots.filter((recorded) => recorded.length === 2).length, 1, `the first batch's snapshot is written: ${JSON.stringify(slots)}`);
  const { rows } = await service.db.pool.query(`SELECT leased_until = '-infinity' AS released FROM sched.org_leases WHERE org_id = $1`, [org.orgId]);
  assert.deepEqual(rows, [{ released: true }]);
  assert.deepEqual(errors, []);
});
