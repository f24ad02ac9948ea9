// A runner stopped while it starts again after a failure (its connection cut, its pool busy)
// holds no connection, lock or subscription once stop() has returned: a restart under way
// used to go on after stop(), and its connection kept the pool from ending.
// A runner started again after stop() restarts after a failure as before: the restart stop()
// cancelled used to stay on record and keep every later one from being scheduled.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createPool } from '../../src/db/pool.ts';
import { projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { until } from '../support/wait.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

test('a runner stopped while its restart waits for a connection holds nothing once stop() has returned', async () => {
  const pool = createPool(service.db.url, { max: 2, applicationName: 'runner-stop-test' });
  const errors: unknown[] = [];
  const runner = new ProjectionRunner(service.store, pool, projections, { schema: 'rm_stop_test', onParked: () => undefined });
  const held = [];
  try {
    await runner.start((error) => errors.push(error));
    assert.ok(runner.active, 'the runner projects');
    held.push(await pool.connect());
    const { rows } = await service.db.pool.query(`SELECT pid FROM pg_stat_activity WHERE application_name = 'runner-stop-test' AND pid <> $1`, [
      (await held[0]!.query('SELECT pg_backend_pid() AS pid')).rows[0].pid,
    ]);
    assert.equal(rows.length, 1, 'one connection is the runner’s');
    // Its connection cut, the runner lets it go and tries again in a second. The connection
    // it lets go goes to a request already waiting, so its restart waits for one.
    const next = pool.connect();
    await service.db.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    held.push(await next);
    await until('the runner’s restart to wait for a connection', () => (pool.waitingCount === 1 ? true : undefined), 5_000, 5);

    const stopping = runner.stop();
    for (const client of held.splice(0)) client.release();
    await stopping;
    assert.equal(runner.active, false);
    assert.equal(pool.totalCount - pool.idleCount, 0, 'no connection is still taken');
    assert.ok(errors.length >= 1, 'the cut connection was reported');
  } finally {
    for (const client of held) client.release();
    await runner.stop();
    await pool.end();
  }
});

test('a runner stopped while a restart is due, then started again, still restarts after a failure', async () => {
  const pool = createPool(service.db.url, { max: 2, applicationName: 'runner-restart-test' });
  const errors: unknown[] = [];
  const runner = new ProjectionRunner(service.store, pool, projections, { schema: 'rm_restart_test', onParked: () => undefined });
  const cutRunnersConnections = async () => {
    const reported = errors.length;
    const { rows } = await service.db.pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'runner-restart-test'`,
    );
    assert.ok(rows.length > 0, 'the runner holds connections');
    await until('the cut to be reported', () => (errors.length > reported ? true : undefined), 5_000, 5);
  };
  try {
    await runner.start((error) => errors.push(error));
    await cutRunnersConnections();
    // Its restart is due in a second; stop() comes first and cancels it.
    await runner.stop();
    // Started again, it may first find its lock still held by a connection just cut, and wait as a standby.
    await runner.start((error) => errors.push(error));
    await until('the runner to project again', () => (runner.active ? true : undefined), 10_000, 20);
    await cutRunnersConnections();
    assert.equal(runner.active, false, 'the failed runner let its connections go');
    await until('the runner to restart after the second failure', () => (runner.active ? true : undefined), 10_000, 20);
  } finally {
    await runner.stop();
    await pool.end();
  }
});
