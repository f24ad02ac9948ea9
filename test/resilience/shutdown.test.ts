// SIGTERM and SIGINT stop the whole service (role all) within 10 s, even in the middle of a
// collection round (here: one waiting on a platform that stopped answering, which the
// collector gives 10 s) and with requests arriving, and its embedded PostgreSQL with it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';
import { isAlive, livePostmaster, serviceProcess, type ServiceProcess } from '../support/process.ts';
import { quietPeriod, until } from '../support/wait.ts';

async function fundedKey(service: ServiceProcess, usd: string): Promise<string> {
  const { org_id: orgId } = await service.admin('org', 'create', '--name', 'Shutdown Test', '--email', 'ops@shutdown.test', '--plan', 'enterprise', '--rate-limit', '1000000');
  const { api_key: key } = (await service.admin('key', 'create', '--org', String(orgId), '--name', 'shutdown')) as { api_key: string };
  await service.admin('deposit', '--org', String(orgId), '--amount', usd);
  return key;
}

/** Requests in a loop until told to stop: load while the service stops (their failures are expected then). */
function load(service: ServiceProcess, key: string): { stop(): Promise<void> } {
  let running = true;
  const loops = Array.from({ length: 6 }, async () => {
    while (running) await service.api('GET', '/usage', key).catch(() => undefined);
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

const youtubeId = (i: number) => `s${String(i).padStart(10, '0')}`;

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} mid-round and under load: the service exits within 10 s and its embedded PostgreSQL is gone`, async (t) => {
    const youtube = await YouTubeFake.start();
    t.after(() => youtube.close());
    for (let i = 0; i < 20; i++) youtube.videos.set(youtubeId(i), { title: `video ${i}`, channelTitle: 'c', description: '', statistics: { viewCount: String(i) } });
    const service = serviceProcess({ TIME_SCALE: '7200', YOUTUBE_API_KEY: youtube.apiKey, YOUTUBE_API_URL: youtube.baseUrl });
    t.after(() => service.cleanup());
    await service.start();
    const key = await fundedKey(service, '1000');
    for (let i = 0; i < 20; i++) {
      const tracked = await service.api('POST', '/videos/track', key, { video_link: `https://youtu.be/${youtubeId(i)}`, duration_days: 2 });
      assert.equal(tracked.status, 201, JSON.stringify(tracked.body));
    }
    await until('collection under way', async () => ((await service.api('GET', '/usage', key)).body.total_snapshots > 40 ? true : undefined), 60_000);

    // The platform stops answering: the next collection round waits on it.
    youtube.delayMs = 60_000;
    const asked = youtube.requests.length;
    await until('a collection round to be waiting on the platform', () => (youtube.requests.length > asked ? true : undefined), 10_000);
    const traffic = load(service, key);
    t.after(() => traffic.stop());

    const pid = service.pid!;
    assert.ok(livePostmaster(service.dataDir), 'the service runs an embedded PostgreSQL');
    const started = performance.now();
    if (signal === 'SIGTERM') {
      // The harness's stop sends SIGTERM, fails past 15 s, and checks the service's PostgreSQL is gone.
      await service.stop('SIGTERM');
    } else {
      process.kill(pid, 'SIGINT');
      await until(`pid ${pid} to exit after SIGINT`, () => (service.pid === null ? true : undefined), 15_000);
    }
    const took = performance.now() - started;
    await traffic.stop();
    assert.ok(took < 10_000, `took ${Math.round(took)} ms to stop`);
    await until('the exit status to be known', () => service.exitStatus ?? undefined, 5_000);
    assert.equal(service.exitStatus, 'code 0', 'a clean stop exits 0');
    assert.equal(livePostmaster(service.dataDir), null, 'the embedded PostgreSQL still runs');
    // Removed only by a clean stop (not by a deadline's forced exit).
    assert.equal(fs.existsSync(path.join(service.dataDir, 'service.json')), false, 'service.json was left behind');
  });
}

test('SIGTERM while the embedded PostgreSQL is still starting: the service exits 0 once that server is gone', async (t) => {
  const service = serviceProcess({ LOG_LEVEL: 'info' });
  let frozen: number | null = null;
  t.after(async () => {
    if (frozen !== null && isAlive(frozen)) process.kill(frozen, 'SIGCONT');
    await service.cleanup();
  });
  // Fails once the service exits during its start, as it is meant to here.
  const starting = service.start().catch(() => undefined);
  // A slow start (a loaded machine, a long WAL replay): the postmaster, stopped as soon as it
  // appears, has not said "ready" when the service is told to stop.
  // initdb's own postgres processes on a new folder write postmaster.pid too: the server is
  // the one given a port.
  const isServer = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('-p');
  const postmaster = await until('the postmaster to be spawned', () => {
    const pid = livePostmaster(service.dataDir);
    return pid !== null && isServer(pid) ? pid : undefined;
  }, 120_000, 2);
  process.kill(postmaster, 'SIGSTOP');
  frozen = postmaster;
  const lines = fs.readFileSync(path.join(service.dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n');
  assert.notEqual(lines[7]?.trim(), 'ready', 'the server was caught before it was ready');
  const pid = service.pid!;
  process.kill(pid, 'SIGTERM');
  await until('the service to log that it is stopping', () => (/"msg":"stopping"/.test(service.lastOutput()) ? true : undefined), 15_000, 10);
  // A stop gives the start under way 1 s before it stops what has started: the server stays
  // frozen well past that, and the service must not exit meanwhile.
  await quietPeriod(3_000);
  const exitedWhileStarting = service.pid === null;
  process.kill(postmaster, 'SIGCONT');
  frozen = null;
  await until(`pid ${pid} to exit after SIGTERM`, () => service.exitStatus ?? undefined, 15_000);
  await starting;
  assert.deepEqual(
    { exitedWhileStarting, serverLeftRunning: livePostmaster(service.dataDir) !== null, exit: service.exitStatus },
    { exitedWhileStarting: false, serverLeftRunning: false, exit: 'code 0' },
    service.lastOutput(),
  );
});
