// The limits the figures are compared with, measured on the same database in the same run.
import type pg from 'pg';

/** A snapshot event's data as the service writes it: the row of the raw-insert limit, and the event of the event-store benchmarks. */
export const SAMPLE_EVENT_DATA = {
  videoId: '00000000-0000-4000-8000-000000000000',
  orgId: 'org_00000000000000000000',
  mode: 'live',
  slot: 5,
  snapshotId: 'snap_000000000000000000000000',
  snapshotTime: '2026-01-01T05:00:00.000Z',
  provider: 'simulator',
  metrics: { views: '123456', likes: '10288', comments: '823' },
  metadata: { title: 'Simulated youtube video AAAAAAAAAAA', creator: 'creator_1234', description: 'Deterministic simulated metrics' },
  price: 15000,
};
const SAMPLE_PAYLOAD = JSON.stringify(SAMPLE_EVENT_DATA);

/** Rows per second of plain multi-row INSERTs (batches of `batch`) into an unindexed-but-for-its-key table. */
export async function rawInsertRate(pool: pg.Pool, rows: number, batch = 5_000): Promise<number> {
  await pool.query('DROP TABLE IF EXISTS bench_raw_insert; CREATE TABLE bench_raw_insert (id bigint PRIMARY KEY, video_id text, slot int, data jsonb)');
  let id = 0;
  const t0 = performance.now();
  while (id < rows) {
    const n = Math.min(batch, rows - id);
    const values: string[] = [];
    const params: unknown[] = [];
    for (let i = 0; i < n; i++) {
      id++;
      params.push(id, `video-${id}`, i, SAMPLE_PAYLOAD);
      values.push(`($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4})`);
    }
    await pool.query(`INSERT INTO bench_raw_insert (id, video_id, slot, data) VALUES ${values.join(', ')}`, params);
  }
  const rate = rows / ((performance.now() - t0) / 1000);
  await pool.query('DROP TABLE bench_raw_insert');
  return rate;
}

/** Events per second of a plain sequential read of the events table (a cursor over a table scan) through the same driver. */
export async function sequentialReadRate(pool: pg.Pool, page = 10_000): Promise<{ rate: number; events: number }> {
  const client = await pool.connect();
  let events = 0;
  const t0 = performance.now();
  try {
    await client.query('BEGIN');
    await client.query('DECLARE everything NO SCROLL CURSOR FOR SELECT position, transaction_id, stream_id, revision, event_id, type, data, metadata, recorded_at FROM es.events');
    for (;;) {
      const { rowCount } = await client.query(`FETCH ${page} FROM everything`);
      if (!rowCount) break;
      events += rowCount;
    }
    await client.query('COMMIT');
  } finally {
    client.release();
  }
  return { rate: events / ((performance.now() - t0) / 1000), events };
}
