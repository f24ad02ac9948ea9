// `npm run bench [-- --smoke] [-- --only NAME]`: every benchmark of the service against the
// limit it is compared with, measured in the same run, as one table. Slowness never fails
// the run: the table says which targets hold.
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startBenchServer } from './env.ts';
import type { Benchmark, Figure } from './types.ts';
import { collectBenchmark } from './collect.ts';
import { closeDataset } from './dataset.ts';
import { rebuildBenchmark } from './rebuild.ts';
import { schedulerBenchmark } from './scheduler.ts';
import { httpBenchmarks } from './http.ts';
import { idleBenchmark } from './idle.ts';
import { dashboardBenchmark } from './dashboard.ts';
import { webhooksBenchmark } from './webhooks.ts';
import { eventStorePeerBenchmark } from './eventstore-peer.ts';

// The benchmarks that make services of their own go before the data set's: its service (a
// million videos, src/bench/dataset.ts) stays open in this process from the collection to the
// scheduler benchmark, and a benchmark run beside it measured less than alone (POST /videos/track:
// 1,926-2,000 req/s after it in this process, 2,290-2,508 alone: BENCHMARKS.md).
const benchmarks: Benchmark[] = [...httpBenchmarks, dashboardBenchmark, collectBenchmark, rebuildBenchmark, schedulerBenchmark, idleBenchmark, webhooksBenchmark, eventStorePeerBenchmark];

const { values } = parseArgs({ options: { smoke: { type: 'boolean' }, only: { type: 'string', multiple: true } } });
const smoke = Boolean(values.smoke);
const chosen = values.only ? benchmarks.filter((b) => values.only!.includes(b.name)) : benchmarks;
if (chosen.length === 0) {
  console.error(`unknown benchmark; choose from ${benchmarks.map((b) => b.name).join(', ')}`);
  process.exit(2);
}

const started = performance.now();
const server = await startBenchServer();
const client = new pg.Client({ connectionString: server.adminUrl });
await client.connect();
const { rows } = await client.query<{ version: string }>('SELECT version()');
await client.end();

console.log(`vidtrack benchmarks${smoke ? ' (--smoke: tiny sizes, figures are not meaningful)' : ''}`);
console.log(`machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}`);
console.log(`node ${process.version}; database: ${server.describe}; ${rows[0]!.version.split(',')[0]}`);

const figures: Figure[] = [];
try {
  for (const benchmark of chosen) {
    const t0 = performance.now();
    console.log(`\n== ${benchmark.name}`);
    const results = await benchmark.run({ smoke, server, log: (m) => console.log(`   ${m}`) });
    figures.push(...results);
    console.log(`   (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
} finally {
  await closeDataset();
  await server.stop();
}

const format = (n: number) => (Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
const table = figures.map((f) => ({
  figure: f.figure,
  value: `${format(f.value)} ${f.unit}`,
  limit: f.limit === null ? '-' : `${format(f.limit)} ${f.unit} (${f.limitLabel})`,
  ratio: f.limit === null || f.limit === 0 ? '-' : (f.value / f.limit).toFixed(2),
  target: f.target,
  met: f.met === null ? 'n/a' : f.met ? 'yes' : 'NO',
  notes: f.notes ?? '',
}));
console.log('');
const columns = ['figure', 'value', 'limit', 'ratio', 'target', 'met', 'notes'] as const;
const widths = columns.map((c) => Math.max(c.length, ...table.map((r) => r[c].length)));
const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
console.log(line(columns));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const row of table) console.log(line(columns.map((c) => row[c])));
console.log(`\nbench: ${figures.length} figures in ${((performance.now() - started) / 1000).toFixed(1)} s`);
