// With TIME_SCALE every process of the service (API, scheduler, admin CLI) must agree on
// the time, so the scaled clock's origin is kept in the database. Service time never goes
// backwards: a new scale starts from the service time the old one had reached.
import type { Pool } from 'pg';
import { systemClock, type Clock } from '../clock.ts';
import type { Migration } from './migrate.ts';

export const serviceClockMigrations: readonly Migration[] = [
  {
    id: 'service/001-clock',
    sql: `CREATE TABLE IF NOT EXISTS public.service_clock (
      id int PRIMARY KEY DEFAULT 1 CHECK (id = 1),
      scale double precision NOT NULL,
      origin_wall timestamptz NOT NULL,
      origin_service timestamptz NOT NULL
    );`,
  },
];

interface ClockRow {
  scale: number;
  origin_wall: Date;
  origin_service: Date;
}

function clockOf(row: ClockRow): Clock {
  const wall = row.origin_wall.getTime();
  const service = row.origin_service.getTime();
  if (row.scale === 1 && wall === service) return systemClock;
  return { now: () => new Date(service + (Date.now() - wall) * row.scale) };
}

async function readRow(pool: Pool): Promise<ClockRow | null> {
  const { rows } = await pool.query<ClockRow>(`SELECT scale, origin_wall, origin_service FROM public.service_clock WHERE id = 1`);
  return rows[0] ?? null;
}

/** The service's clock at `scale`, continuing the stored one when the scale is unchanged. */
export async function startServiceClock(pool: Pool, scale: number): Promise<Clock> {
  const row = await readRow(pool);
  if (row && row.scale === scale) return clockOf(row);
  // A stored clock that has run past what a date holds (a scale from before MAX_TIME_SCALE)
  // starts again from wall time rather than fail every start.
  const stored = row ? clockOf(row).now().getTime() : Number.NaN;
  const serviceNow = Number.isFinite(stored) ? Math.max(Date.now(), stored) : Date.now();
  const fresh: ClockRow = { scale, origin_wall: new Date(), origin_service: new Date(serviceNow) };
  // Processes starting together each computed an origin a few milliseconds apart (seconds of
  // service time at a high scale): the first to store one at this scale wins, and the others
  // take the stored one. The upsert waits for a concurrent writer's commit and then leaves a
  // row already at this scale alone, returning nothing.
  const { rows } = await pool.query<ClockRow>(
    `INSERT INTO public.service_clock AS c (id, scale, origin_wall, origin_service) VALUES (1, $1, $2, $3)
     ON CONFLICT (id) DO UPDATE SET scale = excluded.scale, origin_wall = excluded.origin_wall, origin_service = excluded.origin_service
     WHERE c.scale IS DISTINCT FROM excluded.scale
     RETURNING scale, origin_wall, origin_service`,
    [fresh.scale, fresh.origin_wall, fresh.origin_service],
  );
  // Read in a statement of its own: the upsert's snapshot may predate the winner's commit.
  const kept = rows[0] ?? (await readRow(pool));
  if (!kept) throw new Error('the service clock was stored, and then deleted');
  return clockOf(kept);
}

/** The clock the running service uses (for the admin CLI); wall time when none was stored. */
export async function readServiceClock(pool: Pool): Promise<Clock> {
  const row = await readRow(pool);
  return row ? clockOf(row) : systemClock;
}
