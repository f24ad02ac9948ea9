// `admin deposit` interrupted while it waits for the read models, then run again as the operator
// would: the deposit was recorded (the CLI says so before it waits), and the retry with the same
// --reference is not paid a second time. The projector is down at first, as the CLI's own
// warning allows for, so the first run is still waiting when it is stopped.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { after, test } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { openOrganization } from '../../src/commands/account-commands.ts';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { allMigrations } from '../../src/migrations.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { CHECKPOINT_CHANNEL } from '../../projections/watcher.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { until, within } from '../support/wait.ts';

const root = path.resolve(import.meta.dirname, '../..');
let db: TestDatabase | undefined;
let store: PostgresEventStore | undefined;
let runner: ProjectionRunner | undefined;
const children = new Set<ReturnType<typeof spawn>>();

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await runner?.stop();
  await store?.close();
  await db?.drop();
});

function admin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: db!.url }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

async function depositEvents(orgId: string): Promise<Array<{ depositId: string; amount: number; reference: string | null }>> {
  const { rows } = await db!.pool.query(`SELECT data FROM es.events WHERE type = 'FundsDeposited' AND data->>'orgId' = $1 ORDER BY position`, [orgId]);
  return rows.map((r) => ({ depositId: r.data.depositId, amount: r.data.amount, reference: r.data.reference }));
}

test('a deposit stopped while the CLI waits says it was recorded, and its retry with the same --reference is not paid again', async () => {
  db = await createTestDatabase();
  await migrate(db.pool, allMigrations);
  store = new PostgresEventStore(db.pool);
  const { orgId } = await openOrganization(store, systemClock, { name: 'Acme', email: 'ops@acme.test', plan: 'pro', rateLimit: null });
  const args = ['deposit', '--org', orgId, '--amount', '25', '--reference', 'INV-1'];

  // No projector yet: the CLI records the deposit, then waits for the read models.
  const first = spawn(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: db.url }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(first);
  let stdout = '';
  let stderr = '';
  first.stdout!.on('data', (d) => (stdout += d));
  first.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => first.once('exit', resolve));
  const depositId = await until('the first run to say it recorded the deposit', () => /^recorded: deposit (\S+) of 25 USD$/m.exec(stderr)?.[1], 60_000);
  first.kill('SIGINT'); // the operator stops waiting
  await within('the interrupted CLI to exit', exited, 15_000);
  children.delete(first);
  assert.equal(stdout, '', 'the interrupted run answered on stdout');
  assert.deepEqual(await depositEvents(orgId), [{ depositId, amount: 25_000_000, reference: 'INV-1' }]);

  // The projector is back; the operator runs the same deposit again.
  runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
  await runner.start(() => undefined);
  const retry = await admin(args);
  assert.equal(retry.code, 0, retry.stderr);
  assert.deepEqual(JSON.parse(retry.stdout), { org_id: orgId, balance_usd: 25, already_recorded: true });
  assert.match(retry.stderr, new RegExp(`^already recorded: deposit ${depositId} of 25 USD at \\S+ \\(reference "INV-1"\\); not deposited again\\n$`));
  // It answers once the read models show that deposit, as a first run would.
  const { rows } = await db.pool.query(`SELECT balance FROM ${READ_SCHEMA}.usage WHERE org_id = $1`, [orgId]);
  assert.deepEqual(rows, [{ balance: '25000000' }]);

  // The same reference with another amount is not the same deposit: refused, nothing added.
  const other = await admin(['deposit', '--org', orgId, '--amount', '30', '--reference', 'INV-1']);
  assert.equal(other.code, 1);
  assert.equal(other.stdout, '');
  assert.match(other.stderr, new RegExp(`^error: reference "INV-1" is already deposit ${depositId} of 25 USD \\(at \\S+\\); a deposit of 30 USD needs a reference of its own\\n$`));

  // Another reference, and deposits without one, are each paid.
  const next = await admin(['deposit', '--org', orgId, '--amount', '5', '--reference', 'INV-2']);
  assert.equal(next.code, 0, next.stderr);
  assert.match(next.stderr, /^recorded: deposit \S+ of 5 USD\n$/);
  assert.deepEqual(JSON.parse(next.stdout), { org_id: orgId, balance_usd: 30 });
  for (const balance of [31, 32]) assert.deepEqual(JSON.parse((await admin(['deposit', '--org', orgId, '--amount', '1'])).stdout), { org_id: orgId, balance_usd: balance });
  assert.equal((await depositEvents(orgId)).length, 4);
});
