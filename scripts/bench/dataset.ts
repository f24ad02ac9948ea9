// The large data set shared by the collection, rebuild and scheduler benchmarks: many
// organizations' videos tracked through the real decider, projected by the real runner.
import type { BenchContext } from './types.ts';
import { createDatabase, startBenchService, type BenchService } from './env.ts';
import { seedOrganizations, seedVideos } from './seed.ts';

export interface Dataset {
  service: BenchService;
  videos: number;
  events: number;
}

let shared: Promise<Dataset> | null = null;

/** BENCH_VIDEOS overrides the number of videos (for a quicker look while working on the code). */
export function sizes(smoke: boolean) {
  const videos = Number(process.env.BENCH_VIDEOS) || (smoke ? 1_000 : 1_000_000);
  return { videos, orgs: smoke ? 10 : 100 };
}

/** Made once per run; later benchmarks find it as the earlier ones left it. */
function dataset(context: BenchContext): Promise<Dataset> {
  shared ??= (async () => {
    const { videos, orgs } = sizes(context.smoke);
    // The service's own batch size (5,000), as the scheduler role runs it: 10,000, used here until
    // 2026-11-25, collected 5-6% slower.
    const service = await startBenchService(await createDatabase(context.server, 'bench_dataset'), context.smoke ? { batchSize: 500 } : {});
    const accounts = await seedOrganizations(service.store, service.clock, orgs);
    const t0 = performance.now();
    let reported = 0;
    await seedVideos(service.store, service.clock, accounts, videos, {
      durationDays: 30,
      batch: 5_000,
      onProgress: (done) => {
        if (done - reported >= 200_000) {
          reported = done;
          context.log(`tracked ${done.toLocaleString('en-US')} videos`);
        }
      },
    });
    await service.settle();
    const seconds = (performance.now() - t0) / 1000;
    const { rows } = await service.pool.query<{ n: string }>('SELECT count(*) AS n FROM es.events');
    context.log(`data set: ${videos.toLocaleString('en-US')} videos of ${orgs} organizations, ${Number(rows[0]!.n).toLocaleString('en-US')} events, tracked and projected in ${seconds.toFixed(1)} s (${Math.round((2 * videos) / seconds).toLocaleString('en-US')} events/s)`);
    return { service, videos, events: Number(rows[0]!.n) };
  })();
  return shared;
}

/**
 * The data set as the benchmarks before left it, vacuumed and analyzed first, as pgbench vacuums
 * before each run: else autovacuum does the previous benchmark's upkeep in this one's time (seen:
 * its vacuum of the log, after the collection's 2,000,000 snapshots, through 20 s of a rebuild).
 */
export async function settledDataset(context: BenchContext): Promise<Dataset> {
  const set = await dataset(context);
  const t0 = performance.now();
  await set.service.pool.query('VACUUM (ANALYZE)');
  context.log(`data set vacuumed and analyzed first, in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return set;
}

export async function closeDataset(): Promise<void> {
  if (!shared) return;
  const { service } = await shared;
  shared = null;
  await service.close();
}
