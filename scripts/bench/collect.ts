// Snapshots collected end to end, sustained: due slots claimed, simulator collect, events
// appended, projections caught up; against a raw multi-row INSERT of as many rows.
import { collectDue } from '../../src/collect/work.ts';
import { HOUR_MS } from '../../src/clock.ts';
import { dataset } from './dataset.ts';
import { rawInsertRate } from './limits.ts';
import type { Benchmark } from './types.ts';

export const collectBenchmark: Benchmark = {
  name: 'collect',
  async run(context) {
    const { service, videos } = await dataset(context);
    const minSeconds = context.smoke ? 0 : 60;
    let snapshots = 0;
    let seconds = 0;
    let hours = 0;
    while (hours === 0 || seconds < minSeconds) {
      service.clock.advance(HOUR_MS);
      hours++;
      const t0 = performance.now();
      for (;;) {
        const round = await collectDue(service.work);
        snapshots += round.counts.get('SnapshotRecorded') ?? 0;
        if (round.claimed === 0) break;
      }
      await service.settle();
      seconds += (performance.now() - t0) / 1000;
      context.log(`hour ${hours}: ${snapshots.toLocaleString('en-US')} snapshots so far, ${Math.round(snapshots / seconds).toLocaleString('en-US')}/s`);
    }
    if (snapshots !== hours * videos) throw new Error(`expected ${hours * videos} snapshots, collected ${snapshots}`);
    const limit = await rawInsertRate(service.pool, Math.min(snapshots, 500_000));
    const value = snapshots / seconds;
    return [
      {
        figure: `snapshots collected end to end (${snapshots.toLocaleString('en-US')} in ${seconds.toFixed(0)} s)`,
        value,
        unit: '/s',
        limit,
        limitLabel: 'raw multi-row INSERT',
        target: '>= 20,000/s and >= 1/3 of limit',
        met: context.smoke ? null : value >= 20_000 && value >= limit / 3,
      },
    ];
  },
};
