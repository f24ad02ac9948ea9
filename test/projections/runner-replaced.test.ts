// A runner whose connection is cut while its start waits on a long step (creating its read
// models, or building them beside for a new version) starts again on a new connection, and the
// start that was waiting goes no further once its wait ends. It used to go on with the new
// start's connection and subscribe beside it: two subscriptions applied the same pages on one
// connection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PoolClient } from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { comparePositions, type Position } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { ident, type Projection } from '../../projections/projection.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { bookkeepingDdl } from '../../projections/versions.ts';
import { createTestDatabase } from '../support/db.ts';
import { until } from '../support/wait.ts';

const SCHEMA = 'rm_replaced';
const APPLICATION = 'runner-replaced-test';

/** One row per event applied: an event applied twice shows as two rows. */
const seen: Projection = {
  name: 'seen',
  version: 1,
  tables: ['seen'],
  consumes: [], // its events are no domain events; it only runs live
  ddl: (schema) => `CREATE TABLE IF NOT EXISTS ${ident(schema)}.seen (n int NOT NULL)`,
  async apply(client, schema, events) {
    await client.query(`INSERT INTO ${ident(schema)}.seen SELECT unnest($1::int[])`, [events.map((e) => (e.data as { n: number }).n)]);
  },
};

/** What cutting the runner's connection reports: the server's "terminating connection" or pg's "Connection terminated". */
const isCut = (error: unknown) => (error as { code?: string }).code === '57P01' || /Connection terminated/.test(String((error as Error)?.message));

test('a start whose connection is cut while it creates the read models goes no further once its restart runs: each event is applied once', async () => {
  const db = await createTestDatabase();
  const store = new PostgresEventStore(db.pool);
  const pool = createPool(db.url, { applicationName: APPLICATION, onError: () => undefined });
  const runner = new ProjectionRunner(store, pool, [seen], { schema: SCHEMA, onParked: () => undefined });
  const errors: unknown[] = [];
  let locker: PoolClient | null = null;
  let firstStart: Promise<void> | null = null;
  try {
    await migrate(db.pool, allMigrations);
    // The bookkeeping as migrations make it, and the table already there (made before the
    // version was recorded): both starts' creations then pass the table and wait at the version.
    await db.pool.query(bookkeepingDdl(SCHEMA));
    await db.pool.query(seen.ddl(SCHEMA));
    const append = async (n: number) => (await store.append(`s-${n}`, [{ type: 'E', data: { n } }], 'no_stream')).position;
    await append(1);
    await append(2);
    let last = await append(3);

    // Writes to the versions locked: the start records its version on a connection of its own
    // and waits there, while the connection holding the projector lock sits idle.
    locker = await db.pool.connect();
    await locker.query(`BEGIN; LOCK TABLE ${ident(SCHEMA)}.projection_versions IN SHARE MODE`);
    const waitingOnLocks = (count: number) => async () =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, [APPLICATION])).rows[0]!.n === count
        ? true
        : undefined;
    firstStart = runner.start((error) => errors.push(error));
    await until('the start to wait on the locked versions', waitingOnLocks(1), 15_000);
    const { rows: holders } = await db.pool.query<{ pid: number }>(
      `SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l USING (pid) WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted`,
      [APPLICATION],
    );
    assert.equal(holders.length, 1, 'one connection holds the projector lock');
    await db.pool.query('SELECT pg_terminate_backend($1)', [holders[0]!.pid]);
    // The restart (a second later) takes the projector lock again and waits on the versions too.
    await until('the restart to wait on the locked versions too', waitingOnLocks(2), 15_000);
    await locker.query('ROLLBACK');
    locker.release();
    locker = null;
    await firstStart;

    const passed = (target: Position) => () => {
      const position = runner.position$.value;
      return position && comparePositions(position, target) >= 0 ? true : undefined;
    };
    await until('the runner to pass the events appended before it started', passed(last), 15_000);
    last = await append(4);
    await until('the runner to pass an event appended after', passed(last), 15_000);

    const { rows } = await db.pool.query<{ n: number }>(`SELECT n FROM ${ident(SCHEMA)}.seen ORDER BY n`);
    assert.deepEqual(rows.map((r) => r.n), [1, 2, 3, 4], 'each event applied once');
    assert.ok(errors.length >= 1, 'the cut connection was reported');
    assert.deepEqual(errors.filter((error) => !isCut(error)).map(String), [], 'nothing failed but the cut connection');
    assert.ok(runner.active);
    assert.equal(pool.totalCount - pool.idleCount, 1, 'the runner holds one connection');
  } finally {
    if (locker) {
      await locker.query('ROLLBACK').catch(() => undefined);
      locker.release();
    }
    await runner.stop();
    await firstStart?.catch(() => undefined);
    await pool.end();
    await store.close();
    await db.drop();
  }
});
