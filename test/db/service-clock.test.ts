// The service clock kept in the database (src/db/service-clock.ts): one that a scale from before
// MAX_TIME_SCALE ran past what a date holds must not fail every later start, and processes that
// set it up at the same moment all run on one origin.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import type { Clock } from '../../src/clock.ts';
import { serviceClockMigrations, startServiceClock } from '../../src/db/service-clock.ts';
import { createTestDatabase } from '../support/db.ts';
import { until } from '../support/wait.ts';

test('service clock: a stored clock past what a date holds starts again from wall time; a sound one never goes back', async () => {
  const db = await createTestDatabase();
  try {
    await migrate(db.pool, serviceClockMigrations);
    await db.pool.query(`INSERT INTO public.service_clock (id, scale, origin_wall, origin_service) VALUES (1, 1e300, now() - interval '1 second', now())`);
    const before = Date.now();
    const repaired = (await startServiceClock(db.pool, 1)).now().getTime();
    assert.ok(Number.isFinite(repaired) && repaired >= before && repaired <= Date.now(), `wall time, not ${repaired}`);

    // A sound clock ahead of wall time keeps its lead across a change of scale.
    const ahead = Date.now() + 86_400_000;
    await db.pool.query(`UPDATE public.service_clock SET scale = 2, origin_wall = now(), origin_service = $1`, [new Date(ahead)]);
    assert.ok((await startServiceClock(db.pool, 3)).now().getTime() >= ahead);
  } finally {
    await db.drop();
  }
});

test('service clock: processes setting it up at the same moment all take the one origin stored', async () => {
  const SCALE = 3_600;
  const SETUPS = 4;
  const db = await createTestDatabase();
  // Holds every write to the table (reads go on), so that all setups have read "no clock" and
  // computed an origin of their own before any stores one: the race, made certain.
  const holder = await db.pool.connect();
  let holding = false;
  const setups: Promise<Clock>[] = [];
  try {
    await migrate(db.pool, serviceClockMigrations);
    await holder.query('BEGIN');
    holding = true;
    await holder.query('LOCK TABLE public.service_clock IN EXCLUSIVE MODE');
    const waiting = async () =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'public.service_clock'::regclass AND NOT granted`)).rows[0]!.n;
    for (let i = 0; i < SETUPS; i++) {
      setups.push(startServiceClock(db.pool, SCALE));
      await until(`setup ${i + 1} to wait to store its origin`, async () => ((await waiting()) === i + 1 ? true : undefined), 10_000);
      // Each origin at least a millisecond after the one before: 3.6 s of service time here.
      const computed = Date.now();
      await until('the next millisecond', () => (Date.now() > computed ? true : undefined), 1_000, 1);
    }
    await holder.query('COMMIT');
    holding = false;
    const clocks = await Promise.all(setups);

    const { rows } = await db.pool.query<{ origin_wall: Date; origin_service: Date }>(`SELECT origin_wall, origin_service FROM public.service_clock`);
    const stored = rows[0]!;
    // Read within one millisecond, so that every clock is asked the same wall time.
    const { at, times } = await until('every clock read within one millisecond', () => {
      const at = Date.now();
      const times = clocks.map((clock) => clock.now().getTime());
      return Date.now() === at ? { at, times } : undefined;
    }, 1_000, 1);
    const expected = stored.origin_service.getTime() + (at - stored.origin_wall.getTime()) * SCALE;
    assert.deepEqual(times, clocks.map(() => expected), 'a setup runs on an origin of its own, not the one stored');
  } finally {
    if (holding) await holder.query('ROLLBACK');
    holder.release();
    // A failed test still lets its setups finish before their database goes.
    await Promise.allSettled(setups);
    await db.drop();
  }
});
