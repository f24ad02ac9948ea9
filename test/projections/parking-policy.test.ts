// What the runner parks and what it retries: a failure that says nothing about the event (a
// deadlock, a lost connection) is retried and never parked; one that the event causes is parked
// after the page is split down to it, and every other event of the page is applied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { comparePositions } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { isTransient } from '../../projections/parking.ts';
import { ident, type Projection } from '../../projections/projection.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { createTestDatabase } from '../support/db.ts';
import { within } from '../support/wait.ts';

function sqlError(code: string): pg.DatabaseError {
  return Object.assign(new pg.DatabaseError(`failure ${code}`, 0, 'error'), { code });
}

test('not the event\'s fault: the connection, resources, a restarting server, conflicts, cancels, locks, server bugs and code out of step with the schema', () => {
  for (const code of ['08006', '08003', '53300', '57P01', '57P03', '57014', '40001', '40P01', '55P03', '55006', '58030', 'XX000', '25P02', '42703', '42P01']) {
    assert.ok(isTransient(sqlError(code)), code);
  }
  for (const code of ['22003', '23505', '22P02', '22021', '40002', '23502']) assert.ok(!isTransient(sqlError(code)), code);
  assert.ok(isTransient(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })));
  assert.ok(isTransient(new Error('Connection terminated unexpectedly')));
  assert.ok(!isTransient(new TypeError("Cannot read properties of undefined (reading 'views')")));
});

test('a deadlock is retried, not parked; an event that breaks apply is parked and the rest of its page applied', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  let deadlocks = 1;
  const rows: Projection = {
    name: 'rows',
    version: 1,
    tables: ['rows_seen'],
    consumes: [], // its events are no domain events; it only runs live
    ddl: (schema) => `CREATE TABLE IF NOT EXISTS ${ident(schema)}.rows_seen (n int PRIMARY KEY)`,
    async apply(client, schema, events) {
      if (deadlocks-- > 0) throw sqlError('40P01');
      const ns = events.map((e) => {
        const n = (e.data as { n?: unknown }).n;
        if (typeof n !== 'number') throw new TypeError(`event ${e.id} has no n`);
        return n;
      });
      await client.query(`INSERT INTO ${ident(schema)}.rows_seen SELECT unnest($1::int[])`, [ns]);
    },
  };
  for (const n of [1, 2]) await store.append(`s-${n}`, [{ type: 'E', data: { n } }], 'no_stream');
  await store.append('s-bad', [{ type: 'E', data: { note: 'no n' } }], 'no_stream');
  const last = await store.append('s-3', [{ type: 'E', data: { n: 3 } }], 'no_stream');

  const errors: unknown[] = [];
  const parked: string[] = [];
  const runner = new ProjectionRunner(store, db.pool, [rows], { schema: 'rm', onParked: (p) => parked.push(p.event.streamId) });
  t.after(() => runner.stop());
  await runner.start((error) => errors.push(error));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the runner did not pass the last event within 15 s: ${errors.map(String).join('; ')}`)), 15_000);
    const subscription = runner.position$.subscribe((p) => {
      if (p && comparePositions(p, last.position) >= 0) {
        clearTimeout(timer);
        queueMicrotask(() => subscription.unsubscribe());
        resolve();
      }
    });
  });

  assert.deepEqual(errors.map((e) => (e as { code?: string }).code), ['40P01'], 'the deadlock was reported and the page retried');
  assert.deepEqual(parked, ['s-bad']);
  const { rows: seen } = await db.pool.query(`SELECT n FROM rm.rows_seen ORDER BY n`);
  assert.deepEqual(seen.map((r) => r.n), [1, 2, 3]);
  const { rows: dead } = await db.pool.query(`SELECT stream_id, projection, error FROM rm.parked_events`);
  assert.deepEqual(dead, [{ stream_id: 's-bad', projection: 'rows', error: `event ${(await store.readStream('s-bad'))[0]!.id} has no n` }]);
});

test('a page whose every event fails parks none of them: it is retried until it applies', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  t.after(() => store.close());
  let broken = true;
  const rows: Projection = {
    name: 'rows',
    version: 1,
    tables: ['rows_seen'],
    consumes: [], // its events are no domain events; it only runs live
    ddl: (schema) => `CREATE TABLE IF NOT EXISTS ${ident(schema)}.rows_seen (n int PRIMARY KEY)`,
    async apply(client, schema, events) {
      // A bug of the code, not of the events: every event fails alike until it is fixed.
      if (broken) throw new TypeError('projection bug');
      await client.query(`INSERT INTO ${ident(schema)}.rows_seen SELECT unnest($1::int[])`, [events.map((e) => (e.data as { n: number }).n)]);
    },
  };
  let last = null;
  // What was appended, not headPosition(): another test's open write can hold that back.
  for (const n of [1, 2, 3]) last = (await store.append(`s-${n}`, [{ type: 'E', data: { n } }], 'no_stream')).position;
  const errors: unknown[] = [];
  const parked: string[] = [];
  const runner = new ProjectionRunner(store, db.pool, [rows], { schema: 'rm', onParked: (p) => parked.push(p.event.streamId) });
  t.after(() => runner.stop());
  let reported: () => void = () => undefined;
  const failedOnce = new Promise<void>((resolve) => (reported = resolve));
  await runner.start((error) => {
    errors.push(error);
    reported();
  });
  await within('the runner to report the failing page', failedOnce, 15_000);
  broken = false;
  await within('the runner to pass the page once the bug is fixed', new Promise<void>((resolve) => {
    const subscription = runner.position$.subscribe((p) => {
      if (p && last && comparePositions(p, last) >= 0) {
        queueMicrotask(() => subscription.unsubscribe());
        resolve();
      }
    });
  }), 30_000);
  assert.deepEqual(parked, [], 'nothing was parked');
  assert.match(String((errors[0] as Error).message), /every event of the page failed in projection rows, so none is parked/);
  const { rows: seen } = await db.pool.query(`SELECT n FROM rm.rows_seen ORDER BY n`);
  assert.deepEqual(seen.map((r) => r.n), [1, 2, 3]);
  const { rows: dead } = await db.pool.query(`SELECT count(*)::int AS n FROM rm.parked_events`);
  assert.equal(dead[0].n, 0);
});
