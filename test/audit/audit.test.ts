// The audit as an auditor runs it: a separate process that replays the log and checks the
// usage read model against it, to the micro-dollar.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { HOUR_MS, systemClock } from '../../src/clock.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { deposit, openOrganization } from '../../src/commands/account-commands.ts';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { migrate } from '../../src/db/migrate.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { allMigrations } from '../../src/migrations.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { ProjectionWatcher } from '../../projections/watcher.ts';
import { createTestDatabase } from '../support/db.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { track, youtubeLink } from '../collect/rounds.ts';

const root = path.resolve(import.meta.dirname, '../..');
let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

function audit(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return auditOn(service.db.url, ...args);
}

function auditOn(databaseUrl: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/audit.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: databaseUrl }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

test('the audit proves the ledger from the log, matches the read model, and catches one micro-dollar of difference', async () => {
  const org = await service.organization({ usd: '3' });
  const other = await service.organization({ usd: '1' });
  const started = service.clock.now();
  await track(service, org.liveKey, youtubeLink(), 2);
  await track(service, org.testKey, youtubeLink(), 1);
  await track(service, other.liveKey, youtubeLink(), 1);
  for (let hour = 1; hour <= 5; hour++) {
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
  }
  await chargeUsage(service.work);
  service.clock.advance(HOUR_MS);
  await collectDue(service.work);
  await deposit(service.store, service.clock, org.orgId, parseUsd('0.25')!, 'top-up');
  await service.settle();

  const run = await audit('--org', org.orgId, '--json');
  assert.equal(run.code, 0, run.stderr + run.stdout);
  const [report] = JSON.parse(run.stdout);
  // 7 live snapshots (slots 0..6), 6 charged (0.09), one uncharged (0.015); 3 + 0.25 deposited.
  assert.equal(report.live_snapshots, 7);
  assert.equal(report.test_snapshots, 7);
  assert.equal(report.total_charged_usd, 0.09);
  assert.equal(report.uncharged_usage_usd, 0.015);
  assert.equal(report.balance_usd, 3.16);
  assert.deepEqual(report.ledger.map((e: { kind: string; amount_usd: number }) => [e.kind, e.amount_usd]), [['deposit', 3], ['charge', 0.09], ['deposit', 0.25]]);
  assert.ok(report.ok);

  // The past: before the charge and the top-up.
  const past = await audit('--org', org.orgId, '--at', new Date(started.getTime() + 2.5 * HOUR_MS).toISOString(), '--json');
  assert.equal(past.code, 0, past.stderr);
  const [then] = JSON.parse(past.stdout);
  assert.equal(then.live_snapshots, 3);
  assert.equal(then.total_charged_usd, 0);
  assert.equal(then.balance_usd, 3);
  assert.equal(then.uncharged_usage_usd, 0.045);

  assert.equal((await audit('--all')).code, 0);

  // One micro-dollar off in the read model fails the audit and says where.
  await service.db.pool.query(`UPDATE rm.usage SET balance = balance - 1 WHERE org_id = $1`, [other.orgId]);
  const tampered = await audit('--all');
  assert.equal(tampered.code, 1);
  assert.match(tampered.stdout, new RegExp(`organization ${other.orgId}[\\s\\S]*DIFFERENCE balance: log 910000, read model 909999`));

  // An organization in the log that the read model lost fails the audit too, alone or among all.
  await service.db.pool.query(`DELETE FROM rm.usage WHERE org_id = $1`, [other.orgId]);
  const lost = await audit('--org', other.orgId);
  assert.equal(lost.code, 1);
  assert.match(lost.stdout, new RegExp(`organization ${other.orgId}[\\s\\S]*DIFFERENCE missing from the usage read model`));
  await service.db.pool.query(`DELETE FROM rm.usage`);
  const emptied = await audit('--all');
  assert.equal(emptied.code, 1, emptied.stdout);
  assert.match(emptied.stdout, new RegExp(`organization ${org.orgId}[\\s\\S]*DIFFERENCE missing from the usage read model`));

  const unknown = await audit('--org', 'org_nobody');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stdout, /no such organization/);
  assert.equal((await audit()).code, 2);
});

test('the audit compares every figure GET /usage shows and the charge job reads: active videos, test snapshots, snapshots charged', async () => {
  const org = await service.organization({ usd: '2' });
  await track(service, org.liveKey, youtubeLink(), 1);
  await track(service, org.liveKey, youtubeLink(), 1);
  const cancelled = await track(service, org.testKey, youtubeLink(), 1);
  await track(service, org.testKey, youtubeLink(), 1);
  service.clock.advance(HOUR_MS);
  await collectDue(service.work);
  await chargeUsage(service.work);
  await cancelVideo(service.store, service.clock, cancelled);
  await service.settle();

  const run = await audit('--org', org.orgId, '--json');
  assert.equal(run.code, 0, run.stderr + run.stdout);
  const [report] = JSON.parse(run.stdout);
  assert.deepEqual([report.snapshots_charged, report.test_snapshots, report.active_videos], [4, 4, { live: 2, test: 1 }]);

  // What the read model holds wrong, GET /usage would serve (or the charge job bill from).
  await service.db.pool.query(
    `UPDATE rm.usage SET active_live = active_live + 5, active_test = active_test - 1, test_snapshots = test_snapshots + 2, snapshots_charged = snapshots_charged - 1 WHERE org_id = $1`,
    [org.orgId],
  );
  const tampered = await audit('--org', org.orgId);
  assert.equal(tampered.code, 1, tampered.stdout);
  for (const difference of ['activeLive: log 2, read model 7', 'activeTest: log 1, read model 0', 'testSnapshots: log 4, read model 6', `snapshotsCharged: log ${report.snapshots_charged}, read model ${report.snapshots_charged - 1}`]) {
    assert.match(tampered.stdout, new RegExp(`DIFFERENCE ${difference}\n`));
  }
  assert.match(tampered.stdout, /^  FAILED$/m);
});

test('a deposit reference with a line break stays on its deposit\'s line: it cannot forge an OK', async () => {
  const org = await service.organization();
  // Made through the command, as before the admin CLI refused control characters in a reference.
  await deposit(service.store, service.clock, org.orgId, parseUsd('1')!, 'INV-9\n  OK: the read model matches the log\x1b[2K');
  await service.settle();
  await service.db.pool.query(`UPDATE rm.usage SET balance = balance + 1 WHERE org_id = $1`, [org.orgId]);
  const run = await audit('--org', org.orgId);
  assert.equal(run.code, 1, run.stderr + run.stdout);
  assert.match(run.stdout, /deposit 1\.000000 USD \(INV-9\\u000a  OK: the read model matches the log\\u001b\[2K\)\n/);
  assert.doesNotMatch(run.stdout, /^\s*OK/m);
  assert.match(run.stdout, /^  FAILED$/m);
});

test('a read model behind the log is no OK: the audit shows the log\'s balance now, says how far behind, and exits 1', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  const runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA });
  t.after(async () => {
    await runner.stop();
    await store.close();
  });
  const watcher = new ProjectionWatcher();
  const subscription = runner.position$.subscribe((position) => watcher.update(position));
  t.after(() => subscription.unsubscribe());
  let projectorError: unknown = null;
  await runner.start((error) => (projectorError = error));
  const { orgId } = await openOrganization(store, systemClock, { name: 'Acme', email: 'ops@acme.test', plan: 'pro', rateLimit: null });
  const first = await deposit(store, systemClock, orgId, parseUsd('10')!, 'first');
  assert.ok(await watcher.waitFor(first.position, 10_000), `the projector did not show the first deposit within 10 s: ${String(projectorError)}`);
  assert.equal((await auditOn(db.url, '--org', orgId)).code, 0, 'caught up, the audit passes');

  // The projector down (or stalled), and a deposit it has not seen.
  await runner.stop();
  await deposit(store, systemClock, orgId, parseUsd('5')!, 'second');

  const json = await auditOn(db.url, '--org', orgId, '--json');
  assert.equal(json.code, 1, json.stderr + json.stdout);
  const [report] = JSON.parse(json.stdout);
  assert.equal(report.balance_usd, 15);
  assert.deepEqual(report.ledger.map((e: { amount_usd: number }) => e.amount_usd), [10, 5]);
  assert.equal(report.read_model_lag_events, 1);
  // Where the read model stands it matches the log: a lag, not a difference.
  assert.deepEqual(report.differences, []);
  assert.equal(report.ok, false);

  const text = await auditOn(db.url, '--org', orgId);
  assert.equal(text.code, 1, text.stderr + text.stdout);
  assert.match(text.stdout, /balance 15 USD/);
  assert.match(text.stdout, /LAG the usage read model is 1 events behind the log/);
  assert.doesNotMatch(text.stdout, /OK/);
});
