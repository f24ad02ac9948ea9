// When the scheduler's time-driven jobs can next have work, read from the videos read model.
// Lets an idle scheduler skip rounds that could only find nothing: between two changes of
// the read models, collection has nothing to do before the earliest due slot, and
// completion nothing before the earliest end of a period. Both use partial indexes.
import type { Pool } from 'pg';

export interface NextWork {
  /** Earliest next slot of a monitored video (null: none is monitored). */
  slotAt: Date | null;
  /** Earliest end of a monitored or paused video's period (null: none). */
  endAt: Date | null;
}

/** Slots due by `at` and not yet collected (the scheduler's backlog). */
const DUE_SLOTS = `FROM rm.video_schedule WHERE status = 'monitoring' AND next_slot < total_slots AND next_slot_at <= $1`;

export async function dueSlotCount(pool: Pool, at: Date): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n ${DUE_SLOTS}`, [at]);
  return Number(rows[0]!.n);
}

/** Whether any slot due by `at` is left: one index entry, where a count reads them all. */
export async function anySlotDue(pool: Pool, at: Date): Promise<boolean> {
  const { rowCount } = await pool.query(`SELECT 1 ${DUE_SLOTS} LIMIT 1`, [at]);
  return rowCount === 1;
}

export async function nextWork(pool: Pool): Promise<NextWork> {
  const { rows } = await pool.query<{ slot_at: Date | null; end_at: Date | null }>(
    `SELECT (SELECT min(next_slot_at) FROM rm.video_schedule WHERE status = 'monitoring' AND next_slot < total_slots) AS slot_at,
            (SELECT min(ends_at) FROM rm.videos WHERE status IN ('monitoring', 'paused')) AS end_at`,
  );
  return { slotAt: rows[0]?.slot_at ?? null, endAt: rows[0]?.end_at ?? null };
}
