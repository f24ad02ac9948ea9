// The roles as separate processes against one log and one database: two APIs, two
// projectors (one projects, one stands by), two schedulers. No slot is collected twice, no
// charge is made twice, and when the projecting process is killed the standby takes over.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { serviceProcess, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';

let db: TestDatabase;
const processes: ServiceProcess[] = [];
after(async () => {
  // Every process is stopped (and the database dropped) even when one of them fails to stop.
  const results = await Promise.allSettled(processes.reverse().map((p) => p.cleanup()));
  await db?.drop();
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) throw new AggregateError(failed.map((r) => r.reason), 'stopping the role processes');
});

function role(name: 'api' | 'projector' | 'scheduler'): ServiceProcess {
  const p = serviceProcess({ DATABASE_URL: db.url, ROLE: name, TIME_SCALE: '7200', COLLECTOR_FALLBACK: 'simulator' });
  processes.push(p);
  return p;
}

test('two APIs, two projectors and two schedulers share the work without doubling any of it', async () => {
  db = await createTestDatabase();
  const [projector1, projector2] = [role('projector'), role('projector')];
  await projector1.start();
  await projector2.start();
  const schedulers = [role('scheduler'), role('scheduler')];
  const apis = [role('api'), role('api')];
  await Promise.all([...schedulers, ...apis].map((p) => p.start()));

  const { org_id: orgId } = await apis[0]!.admin('org', 'create', '--name', 'Roles', '--email', 'ops@roles.test', '--plan', 'enterprise', '--rate-limit', '100000');
  const { api_key: key } = (await apis[1]!.admin('key', 'create', '--org', String(orgId), '--name', 'roles')) as { api_key: string };
  await apis[0]!.admin('deposit', '--org', String(orgId), '--amount', '20');
  const tracked = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      apis[i % 2]!.api('POST', '/videos/track', key, { video_link: `https://youtu.be/r${String(i).padStart(10, '0')}`, duration_days: 1 }),
    ),
  );
  for (const t of tracked) assert.equal(t.status, 201, JSON.stringify(t.body));
  // A write through one API is read through the other.
  assert.equal((await apis[1]!.api('GET', `/videos/${tracked[0]!.body.id}`, key)).status, 200);

  // The projecting process dies mid-run (once snapshots are being collected and projected);
  // the standby takes the lock over and carries on.
  await until('snapshots to be collected and projected', async () => {
    const u = await apis[0]!.api('GET', '/usage', key);
    return u.body.total_snapshots > 0 ? true : undefined;
  }, 60_000);
  const { rows: holders } = await db.pool.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`);
  assert.ok(holders[0].n >= 1);
  await projector1.stop('SIGKILL');

  await until('every video to complete', async () => {
    const list = await apis[1]!.api('GET', '/videos?limit=100', key);
    return list.body.videos.length === 20 && list.body.videos.every((v: { status: string }) => v.status === 'completed') ? true : undefined;
  }, 120_000);
  const usage = await until('every snapshot to be charged', async () => {
    const u = await apis[0]!.api('GET', '/usage', key);
    return u.body.uncharged_usage_usd === 0 ? u.body : undefined;
  });
  assert.equal(usage.total_snapshots, 480);
  assert.equal(usage.total_charged_usd, 7.2);
  assert.equal(usage.balance_usd, 12.8);

  // The log itself: one snapshot per slot, and charges that never bill a snapshot twice.
  const { rows: doubled } = await db.pool.query(
    `SELECT stream_id, data->>'slot' AS slot, count(*) FROM es.events WHERE type = 'SnapshotRecorded' GROUP BY 1, 2 HAVING count(*) > 1`,
  );
  assert.deepEqual(doubled, []);
  const { rows: charges } = await db.pool.query(
    `SELECT (data->>'snapshots')::int AS snapshots, (data->>'snapshotsChargedTotal')::int AS total FROM es.events WHERE type = 'UsageCharged' ORDER BY revision`,
  );
  assert.equal(charges.reduce((sum, c) => sum + c.snapshots, 0), 480);
  assert.equal(charges[charges.length - 1].total, 480);
  const audit = await apis[0]!.run('scripts/audit.ts', '--all');
  assert.equal(audit.code, 0, audit.stdout + audit.stderr);
});
