import { startBenchServer, createDatabase, startBenchService } from '/work/main/scripts/bench/env.ts';
import { seedOrganizations, seedVideos } from '/work/main/scripts/bench/seed.ts';
import { collectDue } from '/work/main/src/collect/work.ts';
import { projections } from '/work/main/projections/index.ts';
import { ensureReadModels } from '/work/main/projections/runner.ts';
import { firstValueFrom, take, toArray } from 'rxjs';
const N = 20000;
const server = await startBenchServer();
const svc = await startBenchService(await createDatabase(server, 'probe'), { batchSize: 5000 });
const orgs = await seedOrganizations(svc.store, svc.clock, 20);
await seedVideos(svc.store, svc.clock, orgs, N, { durationDays: 30 });
await svc.settle();
svc.clock.advance(3600_000);
for (;;) { const r = await collectDue(svc.work); if (r.claimed === 0) break; }
await svc.settle();
// Replay everything into a fresh schema, timing each projection
await ensureReadModels(svc.pool, 'rb', projections);
let t = performance.now();
const pages = await firstValueFrom(svc.store.subscribeAll(null, { batchSize: 5000 }).pipe(take(Math.ceil((2*N + 60 + N) / 5000)), toArray()));
const readMs = performance.now() - t;
const count = pages.reduce((a, p) => a + p.length, 0);
console.log(`read ${count} events in ${readMs.toFixed(0)} ms => ${(count/readMs*1000).toFixed(0)}/s`);
const T: Record<string, number> = {};
const client = await svc.pool.connect();
for (const page of pages) {
  await client.query('BEGIN');
  for (const p of projections) { const t0 = performance.now(); await p.apply(client, 'rb', page as any); T[p.name] = (T[p.name] ?? 0) + performance.now() - t0; }
  const t1 = performance.now(); await client.query('COMMIT'); T.commit = (T.commit ?? 0) + performance.now() - t1;
}
client.release();
console.log(Object.fromEntries(Object.entries(T).map(([k, v]) => [k, Math.round(v)])));
await svc.close(); await server.stop();
