import { startBenchServer, createDatabase, startBenchService } from './env.ts';
import { seedOrganizations, seedVideos } from './seed.ts';
import { collectDue } from '../../src/collect/work.ts';
import { projections } from '../../projections/index.ts';
import { ensureReadModels } from '../../projections/runner.ts';
import { firstValueFrom, take, toArray } from 'rxjs';
const N = Number(process.env.N ?? 50000);
const server = await startBenchServer();
const svc = await startBenchService(await createDatabase(server, 'probe'), { batchSize: 5000 });
const orgs = await seedOrganizations(svc.store, svc.clock, 20);
await seedVideos(svc.store, svc.clock, orgs, N, { durationDays: 30 });
await svc.settle();
for (let h = 0; h < 2; h++) { svc.clock.advance(3600_000); await collectDue(svc.work); }
await svc.settle();
const { rows: st } = await svc.pool.query(`select relname, n_tup_upd, n_tup_hot_upd from pg_stat_user_tables where schemaname='rm'`);
console.log(st);
await ensureReadModels(svc.pool, 'rb', projections);
let t = performance.now();
const total = Number((await svc.pool.query('select count(*) from es.events')).rows[0].count);
const pages = await firstValueFrom(svc.store.subscribeAll(null, { batchSize: 5000 }).pipe(take(Math.ceil(total / 5000)), toArray()));
const readMs = performance.now() - t;
const count = pages.reduce((a, p) => a + p.length, 0);
console.log(`read ${count} events in ${readMs.toFixed(0)} ms => ${(count/readMs*1000).toFixed(0)}/s`);
const T: Record<string, number> = {};
const client = await svc.pool.connect();
const Q: Record<string, number> = {};
const orig = client.query.bind(client);
(client as any).query = async (q: any, p?: any) => { const t0 = performance.now(); try { return await orig(q, p); } finally { const k = String(q).replace(/\s+/g, ' ').slice(0, 60); Q[k] = (Q[k] ?? 0) + performance.now() - t0; } };
for (const page of pages) {
  await client.query('BEGIN');
  for (const p of projections) { const t0 = performance.now(); await p.apply(client, 'rb', page as any); T[p.name] = (T[p.name] ?? 0) + performance.now() - t0; }
  const t1 = performance.now(); await client.query('COMMIT'); T.commit = (T.commit ?? 0) + performance.now() - t1;
}
client.release();
console.log(Object.entries(Q).map(([k, v]) => `${Math.round(v)} ${k}`).join('\n'));
console.log(Object.fromEntries(Object.entries(T).map(([k, v]) => [k, Math.round(v)])));
await svc.close(); await server.stop();
