import { startBenchServer, createDatabase } from '/work/main/scripts/bench/env.ts';
import pg from 'pg';
const server = await startBenchServer();
const url = await createDatabase(server, 'raw');
const pool = new pg.Pool({ connectionString: url });
await pool.query(`create table raw (id bigint primary key, video_id text, slot int, data jsonb)`);
const payload = JSON.stringify({ videoId: 'x'.repeat(36), orgId: 'org_e1fcbb21c4b74928a8b6', mode: 'live', slot: 5, metrics: { views: '123456', likes: '1234', comments: '12' }, metadata: { title: 'Simulated youtube video abcdefghijk', creator: 'creator_1234', description: 'Deterministic simulated metrics for https://www.youtube.com/watch?v=abcdefghijk' }, provider: 'simulator', price: 15000 });
const total = 100000, batch = 5000;
let id = 0;
let t = performance.now();
for (let b = 0; b < total / batch; b++) {
  const values: string[] = []; const params: unknown[] = [];
  for (let i = 0; i < batch; i++) { id++; params.push(id, `video-${id}`, i, payload); values.push(`($${i*4+1},$${i*4+2},$${i*4+3},$${i*4+4})`); }
  await pool.query(`insert into raw (id, video_id, slot, data) values ${values.join(',')}`, params);
}
let s = (performance.now() - t) / 1000;
console.log(`multi-row VALUES insert: ${(total/s).toFixed(0)} rows/s`);
t = performance.now();
for (let b = 0; b < total / batch; b++) {
  const ids: number[] = [], vids: string[] = [], slots: number[] = [], datas: string[] = [];
  for (let i = 0; i < batch; i++) { id++; ids.push(id); vids.push(`video-${id}`); slots.push(i); datas.push(payload); }
  await pool.query(`insert into raw (id, video_id, slot, data) select * from unnest($1::bigint[], $2::text[], $3::int[], $4::jsonb[])`, [ids, vids, slots, datas]);
}
s = (performance.now() - t) / 1000;
console.log(`unnest insert: ${(total/s).toFixed(0)} rows/s`);
await pool.end(); await server.stop();
