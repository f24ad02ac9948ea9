// The scheduler holding every video of the data set (1,000,000 in a full run): the real
// Bree scheduler on a clock that runs at wall speed, started just before every video's next
// slot falls due at the same instant (the worst case), measured for memory and lateness.
import { HOUR_MS, type Clock } from '../../src/clock.ts';
import { Scheduler } from '../../src/collect/scheduler.ts';
import { dataset } from './dataset.ts';
import type { Benchmark } from './types.ts';

export const schedulerBenchmark: Benchmark = {
  name: 'scheduler',
  async run(context) {
    const { service, videos } = await dataset(context);
    // The next hour boundary after what the other benchmarks collected.
    const due = Math.ceil((service.clock.now().getTime() + 1) / HOUR_MS) * HOUR_MS;
    const lead = 2_000;
    // --smoke speeds the clock up so that Bree's 10 s collection interval passes quickly.
    const timeScale = context.smoke ? 20 : 1;
    const wallStart = Date.now();
    const clock: Clock = { now: () => new Date(due - lead + (Date.now() - wallStart) * timeScale) };
    let collected = 0;
    let lastAt = 0;
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
    const scheduler = new Scheduler(
      { ...service.work, clock, holder: 'bench-scheduler' },
      {
        timeScale,
        onError: (job, error) => context.log(`${job} failed: ${String(error)}`),
        onRound: (job, counts) => {
          const n = counts.get('SnapshotRecorded') ?? 0;
          if (job === 'collect' && n > 0) {
            collected += n;
            lastAt = clock.now().getTime();
          }
        },
      },
    );
    await scheduler.start();
    const deadline = Date.now() + 600_000;
    while (collected < videos && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await scheduler.stop();
    clearInterval(sampler);
    service.clock.set(new Date(clock.now().getTime()));
    const lateSeconds = (lastAt - due) / 1000;
    context.log(`${collected.toLocaleString('en-US')} of ${videos.toLocaleString('en-US')} slots collected; the last ${lateSeconds.toFixed(1)} s after they fell due`);
    const rssMb = peakRss / 2 ** 20;
    return [
      {
        figure: `scheduler holding ${videos.toLocaleString('en-US')} videos: peak RSS`,
        value: rssMb,
        unit: 'MB',
        limit: null,
        limitLabel: '',
        target: '< 512 MB',
        met: context.smoke ? null : rssMb < 512,
      },
      {
        figure: `scheduler: latest slot, all ${videos.toLocaleString('en-US')} due at once`,
        value: lateSeconds,
        unit: 's late',
        limit: null,
        limitLabel: '',
        target: '<= 60 s',
        met: context.smoke ? null : collected === videos && lateSeconds <= 60,
        notes: collected === videos ? '' : `only ${collected} collected`,
      },
    ];
  },
};
