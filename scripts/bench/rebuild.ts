// Read-model rebuild: the projection runner replaying the whole log into fresh tables
// (and swapping them in); against a plain sequential read of the events table.
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { rebuildReadModels } from '../../projections/rebuild.ts';
import { settledDataset } from './dataset.ts';
import { sequentialReadRate } from './limits.ts';
import type { Benchmark } from './types.ts';

export const rebuildBenchmark: Benchmark = {
  name: 'rebuild',
  async run(context) {
    const { service } = await settledDataset(context);
    const replayed: string[] = [];
    const result = await rebuildReadModels(service.store, service.pool, {
      projections,
      liveSchema: READ_SCHEMA,
      buildSchema: 'rm_bench_rebuild',
      replay: { onReplayed: (name, seconds) => replayed.push(`${name} ${seconds.toFixed(1)} s`) },
    });
    context.log(`read models made where the log lies, as many at once as this machine has cores: ${replayed.join(', ') || 'none'}`);
    await service.settle();
    const limit = await sequentialReadRate(service.pool);
    const value = result.events / result.seconds;
    return [
      {
        figure: `read-model rebuild (${result.events.toLocaleString('en-US')} events in ${result.seconds.toFixed(1)} s)`,
        value,
        unit: 'events/s',
        limit: limit.rate,
        limitLabel: 'sequential read of the events table',
        target: '>= 100,000 events/s (log >= 2,000,000 events)',
        met: context.smoke ? null : value >= 100_000 && result.events >= 2_000_000,
      },
    ];
  },
};
