// The embedded PostgreSQL restarted under a running service (role all): the process stays up
// whatever it was doing (collection rounds, the projector, the e-mail reactor, requests), and
// afterwards it still tracks and collects, without being restarted itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { isAlive, livePostmaster, serviceProcess, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';

async function fundedKey(service: ServiceProcess): Promise<string> {
  const { org_id: orgId } = await service.admin('org', 'create', '--name', 'Restart Test', '--email', 'ops@restart.test', '--plan', 'enterprise', '--rate-limit', '1000000');
  const { api_key: key } = (await service.admin('key', 'create', '--org', String(orgId), '--name', 'restart')) as { api_key: string };
  await service.admin('deposit', '--org', String(orgId), '--amount', '100');
  return key;
}

const link = (prefix: string, i: number) => `https://youtu.be/${prefix}${String(i).padStart(10, '0')}`;

async function snapshotsOf(service: ServiceProcess, key: string, id: string): Promise<number> {
  const video = await service.api('GET', `/videos/${id}`, key);
  return video.status === 200 ? video.body.snapshots.length : 0;
}

test('PostgreSQL restarted under a running service: the same process then tracks and collects', async (t) => {
  const service = serviceProcess({ TIME_SCALE: '3600' });
  // cleanup() stops whichever PostgreSQL runs on the folder, also the one started below.
  t.after(() => service.cleanup());
  await service.start();
  const pid = service.pid!;
  const key = await fundedKey(service);
  const before: string[] = [];
  for (let i = 0; i < 10; i++) {
    const tracked = await service.api('POST', '/videos/track', key, { video_link: link('a', i), duration_days: 2 });
    assert.equal(tracked.status, 201, JSON.stringify(tracked.body));
    before.push(tracked.body.id);
  }
  await until('collection under way', async () => ((await snapshotsOf(service, key, before[0]!)) >= 3 ? true : undefined), 60_000);

  // Requests keep arriving through the outage.
  let loading = true;
  const load = (async () => {
    while (loading) await service.api('GET', '/usage', key).catch(() => undefined);
  })();
  t.after(async () => {
    loading = false;
    await load;
  });

  const postgres = livePostmaster(service.dataDir);
  assert.ok(postgres, 'the service runs an embedded PostgreSQL');
  process.kill(postgres, 'SIGINT'); // a fast shutdown: every connection is cut
  await until(`PostgreSQL pid ${postgres} to stop`, () => (isAlive(postgres) ? undefined : true), 30_000);
  // The outage lasts long enough for every part to fail at least once (rounds run every 200 ms here).
  await until('the service to answer 503 without its database', async () => {
    const usage = await service.api('GET', '/usage', key);
    if (usage.status !== 503) throw new Error(`GET /usage answered ${usage.status} ${JSON.stringify(usage.body)}`);
    return true;
  }, 10_000).catch((error: Error) => {
    throw new Error(`${error.message}\n${service.lastOutput()}`);
  });
  // A supervisor or load balancer learns of it from /health.
  const health = await fetch(`${service.healthBase}/health`);
  assert.deepEqual([health.status, await health.json()], [503, { status: 'database unavailable' }]);
  const restarted = await startEmbeddedPostgres({ dataDir: service.dataDir });
  t.after(() => restarted.stop());

  await until('/health to answer 200 again', async () => ((await fetch(`${service.healthBase}/health`)).ok ? true : undefined), 60_000);
  const after = await until('a track to succeed again', async () => {
    const tracked = await service.api('POST', '/videos/track', key, { video_link: link('b', 0), duration_days: 1 });
    return tracked.status === 201 ? (tracked.body.id as string) : undefined;
  }, 60_000);
  await until('the video tracked after the restart to be collected hour after hour', async () => ((await snapshotsOf(service, key, after)) >= 3 ? true : undefined), 60_000);
  const earlier = await snapshotsOf(service, key, before[0]!);
  await until('the videos tracked before it to go on being collected', async () => ((await snapshotsOf(service, key, before[0]!)) > earlier ? true : undefined), 60_000);
  loading = false;
  await load;
  assert.equal(service.pid, pid, 'the service process was replaced');
  assert.ok(isAlive(pid), 'the service process died');
});
