import { startBenchServer, createDatabase, startBenchService } from '/work/main/scripts/bench/env.ts';
import { seedOrganizations, seedVideos } from '/work/main/scripts/bench/seed.ts';
import { collectDue } from '/work/main/src/collect/work.ts';
const N = Number(process.argv[2] ?? 20000);
const server = await startBenchServer();
const svc = await startBenchService(await createDatabase(server, 'probe'), { batchSize: 5000 });
const orgs = await seedOrganizations(svc.store, svc.clock, 20);
let t = performance.now();
await seedVideos(svc.store, svc.clock, orgs, N, { durationDays: 30 });
const seeded = performance.now() - t;
await svc.settle();
console.log(`seed ${N} videos: append ${(seeded/1000).toFixed(2)}s, +projected ${((performance.now()-t)/1000).toFixed(2)}s => ${(2*N/((performance.now()-t)/1000)).toFixed(0)} events/s`);
for (let h = 1; h <= 2; h++) {
  svc.clock.advance(3600_000);
  t = performance.now();
  let total = 0;
  for (;;) { const r = await collectDue(svc.work); const n = r.counts.get('SnapshotRecorded') ?? 0; total += n; if (r.claimed === 0) break; }
  const s = (performance.now()-t)/1000;
  console.log(`hour ${h}: ${total} snapshots in ${s.toFixed(2)}s => ${(total/s).toFixed(0)}/s`);
}
await svc.close(); await server.stop();
