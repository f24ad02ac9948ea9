// The service clock kept in the database (src/db/service-clock.ts): one that a scale from before
// MAX_TIME_SCALE ran past what a date holds must not fail every later start.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { serviceClockMigrations, startServiceClock } from '../../src/db/service-clock.ts';
import { createTestDatabase } from '../support/db.ts';

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
