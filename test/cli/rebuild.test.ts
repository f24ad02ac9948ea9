// `npm run rebuild` as an operator runs it: a child process on DATABASE_URL. Its edge cases:
// an empty log, a resume that is already caught up, and a rebuild refused because another
// holds the build lock, which must exit non-zero with a clear message instead of waiting.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/migrations.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const root = path.resolve(import.meta.dirname, '../..');
/** Longer than any rebuild here takes; a run still going then is the hang this file guards against. */
const RUN_DEADLINE_MS = 30_000;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function rebuild(db: Pick<TestDatabase, 'url'>, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'scripts/rebuild.ts', ...args],
      { cwd: root, env: { ...process.env, DATABASE_URL: db.url }, timeout: RUN_DEADLINE_MS, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        const failure = error as (Error & { code?: unknown; signal?: NodeJS.Signals | null }) | null;
        resolve({ code: failure ? (typeof failure.code === 'number' ? failure.code : null) : 0, signal: failure?.signal ?? null, stdout, stderr });
      },
    );
  });
}

async function database(t: TestContext): Promise<TestDatabase> {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  return db;
}

/** The projector's first start: it makes the read-model tables (nothing else does). */
async function projectOnce(t: TestContext, db: TestDatabase): Promise<void> {
  const store = new PostgresEventStore(db.pool);
  const runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA });
  t.after(async () => {
    await runner.stop();
    await store.close();
  });
  let failure: unknown = null;
  await runner.start((error) => (failure = error));
  assert.ok(runner.active, `the projector did not start: ${String(failure)}`);
  await runner.stop();
}

test('a rebuild of an empty log swaps in empty read models and exits 0', async (t) => {
  const db = await database(t);
  await projectOnce(t, db);
  const run = await rebuild(db);
  assert.equal(run.code, 0, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.match(run.stdout, /rebuilt .*: 0 events/);
  const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${READ_SCHEMA}.videos`);
  assert.equal(rows[0].n, 0);
});

test('a rebuild on PostgreSQL builds every read model where the log lies, says so, and swaps them in', async (t) => {
  const db = await database(t);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  await store.append('account-org_1', [{ type: 'OrganizationOpened', data: { orgId: 'org_1', name: 'One', email: 'one@example.test', plan: 'free', rateLimit: null, at: '2026-03-01T00:00:00.000Z' } }], 'no_stream');
  await projectOnce(t, db);
  const run = await rebuild(db);
  assert.equal(run.code, 0, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  for (const { name } of projections) assert.match(run.stdout, new RegExp(`built ${name} where the log lies in \\d+\\.\\d s`));
  assert.match(run.stdout, /rebuilt .*: 1 events/);
  const { rows } = await db.pool.query(`SELECT name FROM ${READ_SCHEMA}.organizations`);
  assert.deepEqual(rows, [{ name: 'One' }]);
});

test('a projection named twice is rebuilt once and swapped in', async (t) => {
  const db = await database(t);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  await store.append('account-org_1', [{ type: 'OrganizationOpened', data: { orgId: 'org_1', name: 'One', email: 'one@example.test', plan: 'free', rateLimit: null, at: '2026-03-01T00:00:00.000Z' } }], 'no_stream');
  await projectOnce(t, db);
  const run = await rebuild(db, '--projection', 'api_keys', '--projection', 'api_keys');
  assert.equal(run.code, 0, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.match(run.stdout, /rebuilt api_keys: 1 events .*swapped in/);
  const { rows } = await db.pool.query(`SELECT name FROM ${READ_SCHEMA}.organizations`);
  assert.deepEqual(rows, [{ name: 'One' }]);
});

test('a rebuild into a build schema that has already caught up swaps it in and exits 0', async (t) => {
  const db = await database(t);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  const appended = await store.append('account-org_1', [{ type: 'OrganizationOpened', data: { orgId: 'org_1', name: 'One', email: 'one@example.test', plan: 'free', rateLimit: null, at: '2026-03-01T00:00:00.000Z' } }], 'no_stream');
  await projectOnce(t, db);
  // A rebuild that died after replaying everything and before its swap.
  const build = new ProjectionRunner(store, db.pool, projections, { schema: `${READ_SCHEMA}_rebuild` });
  await build.start((error) => assert.fail(String(error)));
  // What was appended, not headPosition(): another test's open write can hold that back.
  const head = appended.position;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the half-done rebuild did not reach the head of the log within 10 s')), 10_000);
    const subscription = build.position$.subscribe((position) => {
      if (position && head && position.commit === head.commit && position.prepare === head.prepare) {
        clearTimeout(timer);
        queueMicrotask(() => subscription.unsubscribe());
        resolve();
      }
    });
  });
  await build.stop();

  const run = await rebuild(db);
  assert.equal(run.code, 0, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.match(run.stdout, /swapped in/);
  const { rows } = await db.pool.query(`SELECT name FROM ${READ_SCHEMA}.organizations`);
  assert.deepEqual(rows, [{ name: 'One' }]);
});

test('a build left by a killed rebuild of a newer version is dropped, said so, and built afresh', async (t) => {
  const db = await database(t);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  await store.append('account-org_1', [{ type: 'OrganizationOpened', data: { orgId: 'org_1', name: 'One', email: 'one@example.test', plan: 'free', rateLimit: null, at: '2026-03-01T00:00:00.000Z' } }], 'no_stream');
  await projectOnce(t, db);
  // The next version's rebuild, killed before its swap; that deploy was then rolled back.
  const next = projections.map((p) => (p.name === 'videos' ? { ...p, version: p.version + 1 } : p));
  const killed = new ProjectionRunner(store, db.pool, next, { schema: `${READ_SCHEMA}_rebuild` });
  t.after(() => killed.stop());
  await killed.start((error) => assert.fail(String(error)));
  assert.ok(killed.active, 'the newer build ran');
  await killed.stop();

  const run = await rebuild(db);
  assert.equal(run.code, 0, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.match(run.stdout, /dropped the unfinished build of a newer version in rm_rebuild \(videos is at version \d+ in the database, this code has \d+\); building afresh/);
  assert.match(run.stdout, /swapped in/);
  const { rows } = await db.pool.query(`SELECT name FROM ${READ_SCHEMA}.organizations`);
  assert.deepEqual(rows, [{ name: 'One' }]);
  const versions = await db.pool.query(`SELECT version FROM ${READ_SCHEMA}.projection_versions WHERE projection = 'videos'`);
  assert.equal(versions.rows[0].version, projections.find((p) => p.name === 'videos')!.version, 'the live read model stays at this code\'s version');
});

test('a rebuild refused because another holds the build lock exits non-zero at once and says why', async (t) => {
  const db = await database(t);
  await projectOnce(t, db);
  // Another rebuild: a session holding the build schema's lock.
  const other = new pg.Client({ connectionString: db.url });
  await other.connect();
  let run: Run;
  try {
    await other.query(`SELECT pg_advisory_lock(hashtext($1))`, [`vidtrack.projector.${READ_SCHEMA}_rebuild`]);
    run = await rebuild(db);
  } finally {
    await other.end();
  }
  assert.equal(run.signal, null, `the refused rebuild was still running after ${RUN_DEADLINE_MS} ms`);
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /another rebuild .* is running/);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'a message, not a stack trace');
});

/** Nothing listens on port 1: a database the tool cannot reach. */
const UNREACHABLE = { url: 'postgres://nobody:nothing@127.0.0.1:1/nothing' };

test('--help prints the usage on stdout and exits 0; a wrong command line says why with the usage and exits 2, without a stack', async () => {
  const help = await rebuild(UNREACHABLE, '--help');
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: rebuild /);
  for (const args of [['--projection'], ['extra'], ['--frobnicate'], ['--replay-connections', '0'], ['--projection', 'nothing']]) {
    const run = await rebuild(UNREACHABLE, ...args);
    assert.equal(run.code, 2, `rebuild ${args.join(' ')}: exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
    assert.match(run.stderr, /^error: .*\nusage: rebuild /, `rebuild ${args.join(' ')}`);
    assert.doesNotMatch(run.stderr, /\n\s+at /, `rebuild ${args.join(' ')}: a message, not a stack trace`);
  }
});

test('a database the rebuild cannot reach is one line on stderr and exit 1, not a stack trace', async () => {
  const run = await rebuild(UNREACHABLE);
  assert.equal(run.code, 1, `exit ${run.code} (signal ${run.signal}): ${run.stderr}`);
  assert.match(run.stderr, /^error: .*ECONNREFUSED/);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'a message, not a stack trace');
});
