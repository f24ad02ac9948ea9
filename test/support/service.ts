// The whole service on a fresh test database, wired as src/main.ts wires it, but with a
// ManualClock and the scheduler's rounds called directly (no Bree timers), so tests can
// walk through hours and days in milliseconds.
import { ManualClock } from '../../src/clock.ts';
import { apiLogger, buildApp } from '../../src/api/app.ts';
import { Metrics } from '../../src/metrics.ts';
import type { Collector } from '../../src/collect/collector.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import type { WorkDeps } from '../../src/collect/work.ts';
import { deposit, issueKey, openOrganization } from '../../src/commands/account-commands.ts';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/db/schema.ts';
import { parseUsd } from '../../src/domain/money.ts';
import type { Plan, Platform } from '../../src/domain/platform.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../../projections/watcher.ts';
import { createTestDatabase } from './db.ts';

export interface TestServiceOptions {
  start?: string;
  live?: Partial<Record<Platform, Collector>>;
  fallbackToSimulator?: boolean;
  failedAuthLimit?: number;
  /** Where the API's pino logs go (off when absent). */
  logStream?: NodeJS.WritableStream;
}

export type TestService = Awaited<ReturnType<typeof startTestService>>;

export async function startTestService(options: TestServiceOptions = {}) {
  const db = await createTestDatabase();
  await migrate(db.pool, allMigrations);
  const store = new PostgresEventStore(db.pool);
  const watcher = new ProjectionWatcher();
  const runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
  runner.position$.subscribe((p) => watcher.update(p));
  let runnerError: unknown = null;
  await runner.start((error) => (runnerError = error));
  const clock = new ManualClock(options.start ?? '2026-03-01T00:00:00.000Z');
  const collectors = createCollectorSet({ live: options.live ?? {}, fallbackToSimulator: options.fallbackToSimulator ?? true });
  const metrics = new Metrics({ pool: db.pool, clock, store });
  const app = await buildApp(
    { pool: db.pool, store, collectors, clock, watcher, isReady: () => true, failedAuthLimit: options.failedAuthLimit, metrics },
    options.logStream ? { logger: apiLogger('info', options.logStream) } : {},
  );
  const work: WorkDeps = { pool: db.pool, store, collectors, clock, watcher, holder: 'test-scheduler', batchSize: 500 };

  /**
   * Waits until the read models show everything committed to the log. Not store.headPosition():
   * it stops below the oldest transaction still open (the projector's own, say), so it can lag
   * behind an append this test has just made.
   */
  async function settle(): Promise<void> {
    const { rows } = await db.pool.query<{ commit: string; prepare: string }>(
      `SELECT transaction_id::text AS commit, position::text AS prepare FROM es.events ORDER BY transaction_id DESC, position DESC LIMIT 1`,
    );
    const newest = rows[0] ? { commit: BigInt(rows[0].commit), prepare: BigInt(rows[0].prepare) } : null;
    if (!(await watcher.waitFor(newest, 10_000))) throw new Error(`projections did not catch up: ${String(runnerError)}`);
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
    settle,
    organization,
    async close() {
      await app.close();
      await runner.stop();
      await watcher.close();
      await store.close();
      await db.drop();
    },
  };
}
