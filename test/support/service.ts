// The whole service on a fresh test database, composed by createService (src/service.ts) as
// `npm start` composes it, but with a ManualClock, the test's collectors, the API answering
// app.inject instead of a port, and the scheduler's rounds called directly (no Bree timers),
// so tests can walk through hours and days in milliseconds. (The completion e-mail reactor is
// left out: test/notify starts its own, to control its SMTP server.)
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { ManualClock } from '../../src/clock.ts';
import { apiLogger } from '../../src/api/app.ts';
import type { Collector } from '../../src/collect/collector.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import { deposit, issueKey, openOrganization } from '../../src/commands/account-commands.ts';
import { loadConfig } from '../../src/config.ts';
import { parseUsd } from '../../src/domain/money.ts';
import type { Plan, Platform } from '../../src/domain/platform.ts';
import { newestCommittedOn } from '../../src/eventstore/postgres.ts';
import { createService } from '../../src/service.ts';
import { createTestDatabase } from './db.ts';

export interface TestServiceOptions {
  start?: string;
  live?: Partial<Record<Platform, Collector>>;
  fallbackToSimulator?: boolean;
  failedAuthLimit?: number;
  /** Where the API's pino logs go (off when absent). */
  logStream?: NodeJS.WritableStream;
  /** Where the service's own warnings and errors go (off when absent). */
  serviceLogStream?: NodeJS.WritableStream;
  /** More of the environment the service reads (WEBHOOK_ALLOW_HOSTS, say). */
  env?: NodeJS.ProcessEnv;
  /** Run the webhook reactor and dispatcher (default false: only test/notify's webhook tests need them). */
  webhooks?: boolean;
  /** Connections of the service's pool (default 10); a rebuild on it holds one per read model, and one for its lock. */
  poolSize?: number;
}

export type TestService = Awaited<ReturnType<typeof startTestService>>;

export async function startTestService(options: TestServiceOptions = {}) {
  const db = await createTestDatabase();
  // The webhook reactor writes e-mails (.eml, no SMTP here): into a folder of this service's own.
  const dataDir = options.webhooks ? fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-webhooks-')) : null;
  const clock = new ManualClock(options.start ?? '2026-03-01T00:00:00.000Z');
  const collectors = createCollectorSet({ live: options.live ?? {}, fallbackToSimulator: options.fallbackToSimulator ?? true });
  const config = { ...loadConfig({ WEBHOOK_KEY: randomBytes(32).toString('base64'), ...(dataDir ? { DATA_DIR: dataDir } : {}), ...options.env, DATABASE_URL: db.url }, ['all']), ...(options.failedAuthLimit ? { failedAuthLimit: options.failedAuthLimit } : {}) };
  let runnerError: unknown = null;
  const service = createService(config, {
    clock,
    collectors,
    log: options.serviceLogStream ? pino({ level: 'warn' }, options.serviceLogStream) : pino({ level: 'silent' }),
    apiLog: options.logStream ? apiLogger('info', options.logStream) : false,
    listen: false,
    schedule: 'manual',
    emails: false,
    webhooks: options.webhooks ?? false,
    poolSize: options.poolSize ?? 10,
    applicationName: 'vidtrack-test',
    batchSize: 500,
    holder: 'test-scheduler',
    onProjectionError: (error) => (runnerError = error),
  });
  let running;
  try {
    running = await service.start();
  } catch (error) {
    await db.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  const { store, watcher, metrics, work, webhooks } = running;
  const app = running.app!;

  /** Waits until the read models show everything committed to the log (newestCommittedOn says why not headPosition). */
  async function settle(): Promise<void> {
    if (!(await watcher.waitFor(await newestCommittedOn(db.pool), 10_000))) throw new Error(`projections did not catch up: ${String(runnerError)}`);
  }

  /** An organization with a live and a test key, funded with `usd` (a decimal string). */
  async function organization(input: { plan?: Plan; rateLimit?: number; usd?: string; email?: string } = {}) {
    const { orgId } = await openOrganization(store, clock, {
      name: 'Test Org',
      email: input.email ?? 'owner@example.test',
      plan: input.plan ?? 'enterprise',
      rateLimit: input.rateLimit ?? (input.plan && input.plan !== 'enterprise' ? null : 100_000),
    });
    const live = await issueKey(store, clock, { orgId, name: 'live', mode: 'live' });
    const test = await issueKey(store, clock, { orgId, name: 'test', mode: 'test' });
    if (input.usd) await deposit(store, clock, orgId, parseUsd(input.usd)!, 'test funds');
    await settle();
    return { orgId, liveKey: live.apiKey, testKey: test.apiKey, liveKeyId: live.keyId, testKeyId: test.keyId };
  }

  return {
    db,
    store,
    watcher,
    clock,
    app,
    work,
    collectors,
    metrics,
    webhooks,
    /** The service's DATA_DIR when it runs the webhook reactor (its e-mails land in `mail/`). */
    dataDir,
    settle,
    organization,
    async close() {
      try {
        await service.stop();
      } finally {
        await db.drop();
        if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}
