// The watcher of a projector in another process: its LISTEN connection comes back after it
// breaks, so read-your-writes waits are not left to the half-second poll for good.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/migrations.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../../projections/watcher.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { quietPeriod, until } from '../support/wait.ts';

const NAME = 'watcher-test-listener';
let db: TestDatabase;
const watcher = new ProjectionWatcher();

before(async () => {
  db = await createTestDatabase();
  await migrate(db.pool, allMigrations);
});
after(async () => {
  await watcher.close();
  await db?.drop();
});

const listeners = async (name = NAME) =>
  (await db.pool.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [name])).rows.map((r) => r.pid as number);

test('a LISTEN connection cut by the server is opened again, and notifications reach the watcher again', async () => {
  const url = new URL(db.url);
  url.searchParams.set('application_name', NAME);
  // A poll far slower than the test, so only a notification can move the watcher.
  await watcher.follow(url.toString(), db.pool, READ_SCHEMA, projections.map((p) => p.name), 3_600_000);
  const [first] = await until('the watcher to LISTEN', async () => ((await listeners()).length === 1 ? await listeners() : undefined), 10_000);
  await db.pool.query('SELECT pg_terminate_backend($1)', [first]);
  const [second] = await until('the watcher to LISTEN again after its connection was cut', async () => {
    const pids = await listeners();
    return pids.length === 1 && pids[0] !== first ? pids : undefined;
  }, 20_000);
  assert.notEqual(second, first);
  const reached = watcher.waitFor({ commit: 7n, prepare: 42n }, 10_000);
  await db.pool.query('SELECT pg_notify($1, $2)', [CHECKPOINT_CHANNEL, '7/42']);
  assert.equal(await reached, true, 'the notification sent after the reconnection moved the watcher');
});

test('a notification whose payload is no position is ignored; the next good one still moves the watcher', async () => {
  // Thrown in pg's handler, a bad payload was an uncaught exception: the API process went down.
  for (const payload of ['hello', '5', '1/x', '/', '1/2/3']) await db.pool.query('SELECT pg_notify($1, $2)', [CHECKPOINT_CHANNEL, payload]);
  const reached = watcher.waitFor({ commit: 8n, prepare: 1n }, 10_000);
  await db.pool.query('SELECT pg_notify($1, $2)', [CHECKPOINT_CHANNEL, '8/1']);
  assert.equal(await reached, true);
});

/**
 * The pool the watcher reads the checkpoints with: once armed, its next query runs `fail`
 * (which throws), and the ones after it succeed.
 */
function poolFailingOnce(fail: () => Promise<never>) {
  let armed = false;
  let readSince = false;
  const pool = {
    query: async (...args: unknown[]) => {
      if (armed) {
        armed = false;
        return fail();
      }
      const result = await (db.pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
      readSince = true;
      return result;
    },
  } as unknown as pg.Pool;
  return { pool, arm: () => ((armed = true), (readSince = false)), readAfterFailure: () => (!armed && readSince) || undefined };
}

/**
 * Follows with `pool` under the application name `name`, cuts the LISTEN connection with the
 * pool armed, waits for a checkpoint read after the failed one, then runs `check`; the
 * watcher is closed and must leave no LISTEN connection, also on failure.
 */
async function afterFailedReconnection(name: string, reading: ProjectionWatcher, failing: ReturnType<typeof poolFailingOnce>, check: () => Promise<void>) {
  const url = new URL(db.url);
  url.searchParams.set('application_name', name);
  try {
    // A poll far slower than the test: only a reconnection reads the checkpoints.
    await reading.follow(url.toString(), failing.pool, READ_SCHEMA, projections.map((p) => p.name), 3_600_000);
    const [first] = await until('the watcher to LISTEN', async () => ((await listeners(name)).length === 1 ? await listeners(name) : undefined), 10_000);
    failing.arm();
    await db.pool.query('SELECT pg_terminate_backend($1)', [first]);
    await until('a checkpoint read after the failed one', failing.readAfterFailure, 20_000);
    await check();
  } finally {
    await reading.close();
  }
  await until('no LISTEN connection left after close()', async () => ((await listeners(name)).length === 0 ? true : undefined), 5_000);
}

test('a checkpoint read that fails after a reconnection leaves one LISTEN connection, and close() ends it', async () => {
  const name = 'watcher-test-read-fails';
  // The read fails as a busy pool or a server just back would fail it.
  const failing = poolFailingOnce(async () => {
    throw new Error('timeout exceeded when trying to connect');
  });
  // Reconnects after 1 s, its read fails; reconnects again 2 s later, and reads.
  await afterFailedReconnection(name, new ProjectionWatcher(), failing, async () => {
    assert.equal((await listeners(name)).length, 1, 'LISTEN connections once the watcher has reconnected');
  });
});

test('a reconnection whose LISTEN connection is cut and whose checkpoint read fails, both at once, is retried once', async () => {
  const name = 'watcher-test-both-fail';
  const reading = new ProjectionWatcher();
  const listenerOf = () => (reading as unknown as { listener: unknown }).listener;
  // The read cuts the LISTEN connection just opened, waits for the watcher to notice, and fails
  // (a database going down again right after a reconnection).
  const failing = poolFailingOnce(async () => {
    await db.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [name]);
    await until('the watcher to notice its LISTEN connection cut', () => (listenerOf() === null ? true : undefined), 10_000, 10);
    throw new Error('the database went away');
  });
  await afterFailedReconnection(name, reading, failing, async () => {
    // The one reconnection happened; a second one scheduled for the same loss would come
    // within 2 s (the backoff after one failure) and open another connection.
    await quietPeriod(2_500);
    assert.equal((await listeners(name)).length, 1, 'LISTEN connections once the watcher has reconnected');
  });
});
