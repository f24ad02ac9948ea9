// The read model both stores' catch-up subscribers build: events per stream, one upsert per page
// (or per event, where the store hands its projection one event at a time).
import type pg from 'pg';

export const PROJECTION_DDL = `create table if not exists bench_stream_events (stream_id text primary key, events int not null)`;

/** The upsert of a page, its stream ids given as one JSON array at `parameter` ($1, or a formatted literal). */
export function projectSql(parameter: string): string {
  return `insert into bench_stream_events (stream_id, events)
          select stream_id, count(*) from jsonb_array_elements_text(${parameter}::jsonb) as e(stream_id) group by stream_id
          on conflict (stream_id) do update set events = bench_stream_events.events + excluded.events`;
}

/** Events the projection has counted: checked against the log, so a fast but lossy subscriber cannot pass. */
export async function projectedEvents(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>('select coalesce(sum(events), 0)::text as n from bench_stream_events');
  return Number(rows[0]!.n);
}
