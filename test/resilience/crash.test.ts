// Real processes, real PostgreSQL: kill -9 the service while it collects and projects, or
// take its database away for a few seconds, and prove with the audit that no snapshot or
// charge was lost or doubled, and that it recovers by itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { isAlive, livePostmaster, serviceProcess, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';

async function fundedKey(service: ServiceProcess, usd: string): Promise<string> {
  const { org_id: orgId } = await service.admin('org', 'create', '--name', 'Crash Test', '--email', 'ops@crash.test', '--plan', 'enterprise', '--rate-limit', '100000');
  const { api_key: key } = (await service.admin('key', 'create', '--org', String(orgId), '--name', 'resilience')) as { api_key: string };
  await service.admin('deposit', '--org', String(orgId), '--amount', usd);
  return key;
}

async function trackMany(service: ServiceProcess, key: string, count: number, prefix: string): Promise<string[]> {
  const tracked = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      service.api('POST', '/videos/track', key, { video_link: `https://youtu.be/${prefix}${String(i).padStart(11 - prefix.length, '0')}`, duration_days: 1 }),
    ),
  );
  for (const t of tracked) assert.equal(t.status, 201, JSON.stringify(t.body));
  return tracked.map((t) => t.body.id as string);
}

/** Every video completed with exactly 24 snapshots, one per slot, and the usage charged in full. */
async function everythingAccountedFor(service: ServiceProcess, key: string, ids: string[], usd: number): Promise<void> {
  await until('every video to complete', async () => {
    const list = await service.api('GET', '/videos?limit=100', key);
    return list.body.videos.length === ids.length && list.body.videos.every((v: { status: string }) => v.status === 'completed') ? true : undefined;
  }, 120_000);
  for (const id of ids) {
    const video = await service.api('GET', `/videos/${id}`, key);
    assert.equal(video.body.snapshots.length, 24, `video ${id}`);
    assert.equal(new Set(video.body.snapshots.map((s: { snapshot_id: string }) => s.snapshot_id)).size, 24);
  }
  const usage = await until('every snapshot to be charged', async () => {
    const u = await service.api('GET', '/usage', key);
    return u.body.uncharged_usage_usd === 0 ? u.body : undefined;
  });
  assert.equal(usage.total_snapshots, ids.length * 24);
  assert.equal(usage.total_charged_usd, Math.round(ids.length * 24 * 15_000) / 1e6);
  assert.equal(usage.balance_usd, Math.round((usd * 1e6 - ids.length * 24 * 15_000)) / 1e6);
  const audit = await service.run('scripts/audit.ts', '--all');
  assert.equal(audit.code, 0, audit.stdout + audit.stderr);
}

/** Mid-run: the service has collected and projected some snapshots (a kill now interrupts real work). */
async function collecting(service: ServiceProcess, key: string, snapshots: number): Promise<void> {
  await until(`${snapshots} snapshots to be collected and projected`, async () => {
    const usage = await service.api('GET', '/usage', key);
    return usage.body.total_snapshots >= snapshots ? true : undefined;
  }, 60_000);
}

test('kill -9 while collecting and projecting: after a restart nothing is lost or doubled', async (t) => {
  const service = serviceProcess({ TIME_SCALE: '7200' });
  t.after(() => service.cleanup());
  await service.start();
  const key = await fundedKey(service, '100');
  const ids = await trackMany(service, key, 30, 'k');
  await collecting(service, key, 60);
  await service.stop('SIGKILL');
  await service.start();
  await everythingAccountedFor(service, key, ids, 100);
  // The restarted service adopted the server its killed predecessor left, so a clean stop ends both.
  await service.stop();
  assert.equal(livePostmaster(service.dataDir), null);
});

test('PostgreSQL stopped for a few seconds under load: the service answers 503 meanwhile and recovers by itself', async (t) => {
  const service = serviceProcess({ TIME_SCALE: '3600' });
  // cleanup() stops whichever PostgreSQL runs on the folder, also the one restarted below.
  t.after(() => service.cleanup());
  await service.start();
  const key = await fundedKey(service, '50');
  const ids = await trackMany(service, key, 10, 'p');
  await collecting(service, key, 10);

  const pid = livePostmaster(service.dataDir);
  assert.ok(pid, 'the service runs an embedded PostgreSQL');
  process.kill(pid, 'SIGINT'); // a fast shutdown: every connection is cut
  await until(`PostgreSQL pid ${pid} to stop`, async () => (isAlive(pid) ? undefined : true), 30_000);
  const during = await service.api('GET', '/usage', key).catch(() => ({ status: 0 }));
  assert.ok(during.status === 503 || during.status === 401, `answered ${during.status} without its database`);
  // Not a synchronization: the outage itself, long enough for rounds and the projector to fail and retry.
  await new Promise((r) => setTimeout(r, 3_000));

  const restarted = await startEmbeddedPostgres({ dataDir: service.dataDir });
  t.after(() => restarted.stop());
  await everythingAccountedFor(service, key, ids, 50);
  // And it takes new work.
  const more = await trackMany(service, key, 1, 'q');
  assert.equal(more.length, 1);
});
