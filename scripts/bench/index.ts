// `npm run bench [-- --smoke] [-- --only NAME]`: every benchmark of the service against the
// limit it is compared with, measured in the same run, as one table. Slowness never fails
// the run: the table says which targets hold.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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

// Each benchmark runs in a process of its own, on a PostgreSQL server of its own, as a service
// would, so that no figure depends on what ran before it: POST /videos/track measured 1,926 req/s
// in a whole run beside the million-video data set's service, and 2,289-2,508 alone
// (BENCHMARKS.md). Only the benchmarks of the large data set (dataset.ts) share a process, since
// they share the data set.
const benchmarks: Benchmark[] = [collectBenchmark, rebuildBenchmark, schedulerBenchmark, ...httpBenchmarks, dashboardBenchmark, idleBenchmark, webhooksBenchmark, eventStorePeerBenchmark];
const ON_THE_DATA_SET = new Set([collectBenchmark, rebuildBenchmark, schedulerBenchmark].map((b) => b.name));

// --figures FILE: run the chosen benchmarks in this process and write their figures there.
const { values } = parseArgs({ options: { smoke: { type: 'boolean' }, only: { type: 'string', multiple: true }, figures: { type: 'string' } } });
const smoke = Boolean(values.smoke);
const chosen = values.only ? benchmarks.filter((b) => values.only!.includes(b.name)) : benchmarks;
if (chosen.length === 0) {
  console.error(`unknown benchmark; choose from ${benchmarks.map((b) => b.name).join(', ')}`);
  process.exit(2);
}

const started = performance.now();
if (values.figures) {
  await runHere(chosen, values.figures);
  process.exit(0);
}
const figures = await runEachInItsOwnProcess(chosen);

async function runHere(here: Benchmark[], file: string): Promise<void> {
  const server = await startBenchServer();
  const results: Figure[] = [];
  try {
    for (const benchmark of here) {
      const t0 = performance.now();
      console.log(`\n== ${benchmark.name}`);
      results.push(...(await benchmark.run({ smoke, server, log: (m) => console.log(`   ${m}`) })));
      console.log(`   (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    }
  } finally {
    await closeDataset();
    await server.stop();
  }
  fs.writeFileSync(file, JSON.stringify(results));
}

async function runEachInItsOwnProcess(all: Benchmark[]): Promise<Figure[]> {
  const server = await startBenchServer();
  const client = new pg.Client({ connectionString: server.adminUrl });
  await client.connect();
  const { rows } = await client.query<{ version: string }>('SELECT version()');
  await client.end();
  await server.stop();
  console.log(`vidtrack benchmarks${smoke ? ' (--smoke: tiny sizes, figures are not meaningful)' : ''}`);
  console.log(`machine: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.availableParallelism()} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}`);
  console.log(`node ${process.version}; database: ${server.describe}${process.env.BENCH_DATABASE_URL ? '' : ', a server of its own for each process'}; ${rows[0]!.version.split(',')[0]}`);
  const groups: Benchmark[][] = [];
  for (const benchmark of all) {
    const shared = ON_THE_DATA_SET.has(benchmark.name) ? groups.find((g) => ON_THE_DATA_SET.has(g[0]!.name)) : undefined;
    if (shared) shared.push(benchmark);
    else groups.push([benchmark]);
  }
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-bench-figures-'));
  const results: Figure[] = [];
  try {
    for (const [i, group] of groups.entries()) {
      const file = path.join(folder, `${i}.json`);
      const args = [...process.execArgv, fileURLToPath(import.meta.url), ...(smoke ? ['--smoke'] : []), ...group.flatMap((b) => ['--only', b.name]), '--figures', file];
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn(process.execPath, args, { stdio: 'inherit' });
        child.on('error', reject);
        child.on('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
      });
      if (code !== 0) throw new Error(`benchmarks ${group.map((b) => b.name).join(', ')} failed (exit code ${code})`);
      results.push(...(JSON.parse(fs.readFileSync(file, 'utf8')) as Figure[]));
    }
  } finally {
    fs.rmSync(folder, { recursive: true, force: true });
  }
  return results;
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
