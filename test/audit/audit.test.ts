// The audit as an auditor runs it: a separate process that replays the log and checks the
// usage read model against it, to the micro-dollar.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { track, youtubeLink } from '../collect/rounds.ts';

const root = path.resolve(import.meta.dirname, '../..');
let service: TestService;

before(async () => {
  service = await startTestService();
});
after(() => service.close());

function audit(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/audit.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: service.db.url } }, (error, stdout, stderr) =>
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
