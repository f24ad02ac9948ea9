// The pool's connections when the server cuts them (a PostgreSQL restart, pg_terminate_backend).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPool } from '../../src/db/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { until } from '../support/wait.ts';

test('a connection cut by the server while checked out between two statements does not crash the process, and is not handed out again', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  const pool = createPool(db.url, { applicationName: 'vidtrack-cut', onError: () => undefined });
  t.after(() => pool.end());
  const client = await pool.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  const pid = rows[0]!.pid;
  // No statement under way on it: the FATAL the server sends reaches the client as an 'error'
  // event, which pg-pool does not listen to while the connection is checked out. Without a
  // listener of our own, node:test reports it as an uncaught exception and this test fails.
  await db.pool.query('select pg_terminate_backend($1)', [pid]);
  await until(`backend ${pid} to be gone`, async () => {
    const left = await db.pool.query('select 1 from pg_stat_activity where pid = $1', [pid]);
    return left.rowCount === 0 ? true : undefined;
  }, 10_000);
  await assert.rejects(client.query('select 1'), 'the cut connection runs no more statements');
  client.release();
  const again = await pool.query<{ pid: number }>('select pg_backend_pid() as pid');
  assert.notEqual(again.rows[0]!.pid, pid, 'the pool handed out the cut connection again');
});
