import { startBenchServer, createDatabase } from './env.ts';
import pg from 'pg';
import { randomUUID } from 'node:crypto';
const server = await startBenchServer();
const pool = new pg.Pool({ connectionString: await createDatabase(server, 'p5') });
const N = 50000;
const ids = Array.from({ length: N }, () => randomUUID());
const meta = JSON.stringify({ title: 'Simulated youtube video AAAAAAAAAAA', creator: 'creator_1234', description: 'Deterministic simulated metrics for https://www.youtube.com/watch?v=AAAAAAAAAAA' });
async function setup(ff: number) {
  await pool.query(`drop table if exists v; create table v (video_id text primary key, org_id text, mode text, created_at timestamptz, status text, ends_at timestamptz, next_slot int, snapshot_count int, consecutive_failures int, current_metadata jsonb, last_updated timestamptz, revision bigint, pad text) with (fillfactor=${ff});
    create index on v (org_id, mode, created_at desc, video_id); create index on v (ends_at) where status in ('monitoring','paused');`);
  await pool.query(`insert into v select id, 'org_' || (i % 100), 'live', now(), 'monitoring', now() + interval '30 days', 1, 1, 0, $2::jsonb, now(), 1, repeat('x', 200) from unnest($1::text[]) with ordinality as t(id, i)`, [ids, meta]);
  await pool.query('vacuum analyze v');
}
async function run(label: string, sql: (b: string[]) => [string, unknown[]]) {
  let t = performance.now();
  for (let r = 0; r < 3; r++) for (let i = 0; i < N; i += 5000) { const b = ids.slice(i, i + 5000); const [q, p] = sql(b); await pool.query(q, p); }
  console.log(label, ((performance.now() - t) / 3).toFixed(0), 'ms per', N);
}
for (const ff of [100, 50]) {
  await setup(ff);
  await run(`ff${ff} unnest update counters only`, (b) => [`update v set snapshot_count = v.snapshot_count + c.d, next_slot = greatest(v.next_slot, c.n), last_updated = c.t, revision = v.revision + 1 from unnest($1::text[], $2::int[], $3::int[], $4::timestamptz[]) as c(id, d, n, t) where v.video_id = c.id`, [b, b.map(() => 1), b.map(() => 2), b.map(() => new Date())]]);
  await run(`ff${ff} unnest update + metadata`, (b) => [`update v set snapshot_count = v.snapshot_count + c.d, current_metadata = coalesce(c.m::jsonb, v.current_metadata), last_updated = c.t from unnest($1::text[], $2::int[], $3::text[], $4::timestamptz[]) as c(id, d, m, t) where v.video_id = c.id`, [b, b.map(() => 1), b.map(() => null), b.map(() => new Date())]]);
  const { rows } = await pool.query(`select n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where relname = 'v'`); console.log(rows);
}
await pool.end(); await server.stop();
