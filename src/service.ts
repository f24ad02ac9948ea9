// The composition of the service: one function wires every role, for `npm start`
// (src/main.ts), the tests (test/support/service.ts), the command-line tools (src/cli) and the
// benchmarks, so that what is tested is what runs. Roles: all, api, projector, scheduler, or
// none (the command-line tools: database, log and read-your-writes only).
//
// Stopping has a budget: every part gets a deadline, in an order that lets work under way
// finish (the API's requests and the scheduler's round first, while the projector still
// projects for them), and whatever overruns is abandoned to fail when its database goes, so
// that the embedded PostgreSQL is always stopped in time (src/main.ts gives the whole stop
// 10 s).
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import pino, { type Logger } from 'pino';
import type pg from 'pg';
import { systemClock, type Clock } from './clock.ts';
import { apiLogger, buildApp } from './api/app.ts';
import { healthHandler } from './api/health.ts';
import { createCollectorSet, type CollectorSet } from './collect/collectors.ts';
import { liveCollectorsFromEnv } from './collect/collectors/from-env.ts';
import { Scheduler } from './collect/scheduler.ts';
import type { WorkDeps } from './collect/work.ts';
import { CollectionActivity } from './collect/activity.ts';
import type { Config, Role } from './config.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { createPool } from './db/pool.ts';
import { KeyUsageCounter } from './dashboard/key-usage.ts';
import { readServiceClock, startServiceClock } from './db/service-clock.ts';
import { createEventStore } from './eventstore/create.ts';
import type { EventStore } from './eventstore/port.ts';
import { Metrics } from './metrics.ts';
import { allMigrations } from './migrations.ts';
import { CompletionEmails } from './notify/completion-email.ts';
import { loadSecretBox } from './notify/webhooks/secret-box.ts';
import { webhookPolicy } from './notify/webhooks/policy.ts';
import { WebhookReactor, type WebhookReactorDeps } from './notify/webhooks/reactor.ts';
import { removeServiceFile, urlOf, writeServiceFile } from './service-file.ts';
import { READ_SCHEMA, projections } from '../projections/index.ts';
import { describeParked } from '../projections/parking.ts';
import { ProjectionRunner } from '../projections/runner.ts';
import { readModelsReady } from '../projections/versions.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../projections/watcher.ts';

export type Part = 'api' | 'projector' | 'scheduler';

export interface ServiceOptions {
  /** The parts to run (default: those of config.role; [] for a command-line tool). */
  parts?: readonly Part[];
  /**
   * Default: the service clock kept in the database, at config.timeScale (set there if the
   * scale changed). 'read': the clock the running service keeps, never changed (the CLI).
   */
  clock?: Clock | 'read';
  /** Default: the platforms' collectors from the environment, with config.collectorFallback. */
  collectors?: CollectorSet;
  log?: Logger;
  /** The API's request log (default: pino at config.logLevel). */
  apiLog?: FastifyServerOptions['logger'];
  /** False: the API is built but does not listen (tests use app.inject). Default true. */
  listen?: boolean;
  /** 'bree' (default): the scheduler runs its rounds by itself; 'manual': the caller runs them through `work`. */
  schedule?: 'bree' | 'manual';
  /** Run the completion e-mail reactor with the projector (default true). */
  emails?: boolean;
  /** Run the webhook reactor and its dispatcher with the projector (default true). */
  webhooks?: boolean;
  /** The webhook dispatcher's HTTP attempt (tests); default: a real POST. */
  webhookPost?: WebhookReactorDeps['post'];
  /** False: the dashboard's per-key request counters are off (a benchmark's baseline). Default true. */
  keyUsage?: boolean;
  /** Write `${dataDir}/service.json` once ready, remove it on stop, as src/service-file.ts allows roles sharing a DATA_DIR (src/main.ts). */
  serviceFile?: boolean;
  /** The pool's size (default 20) and its name in pg_stat_activity. */
  poolSize?: number;
  applicationName?: string;
  /** Videos per scheduler batch (default 5,000) and the scheduler's name in leases. */
  batchSize?: number;
  holder?: string;
  /** Told of the embedded PostgreSQL as soon as it runs, before start() resolves (src/main.ts stops it on a second signal). */
  onEmbedded?: (server: EmbeddedPostgres) => void;
  /** Told when the projection runner fails (it starts again by itself). */
  onProjectionError?: (error: unknown) => void;
}

/** What a started service is made of. */
export interface RunningService {
  databaseUrl: string;
  embedded: EmbeddedPostgres | null;
  pool: pg.Pool;
  store: EventStore;
  watcher: ProjectionWatcher;
  clock: Clock;
  collectors: CollectorSet;
  metrics: Metrics;
  /** The scheduler's dependencies (its rounds can be run by hand with `schedule: 'manual'`). */
  work: WorkDeps;
  app: FastifyInstance | null;
  runner: ProjectionRunner | null;
  scheduler: Scheduler | null;
  /** The webhook reactor (with the projector, unless options.webhooks is false). */
  webhooks: WebhookReactor | null;
  apiUrl: string | null;
  metricsUrl: string | null;
  /** True once every part runs and the read models exist. */
  isReady(): boolean;
}

export interface Service {
  start(): Promise<RunningService>;
  /** Stops every part within its budget; safe to call at any time, more than once. */
  stop(): Promise<void>;
}

const PARTS_OF: Record<Role, readonly Part[]> = {
  all: ['api', 'projector', 'scheduler'],
  api: ['api'],
  projector: ['projector'],
  scheduler: ['scheduler'],
};

/** Budgets of the stop, in ms: requests and rounds, then the projector, then the pool; the rest is PostgreSQL's. */
const STOP_WORK_MS = 3_000;
const STOP_PROJECTOR_MS = 1_500;
const STOP_POOL_MS = 1_000;
/** How often an API waiting for the projector to create the read models looks again. */
const READY_CHECK_MS = 1_000;

export function createService(config: Config, options: ServiceOptions = {}): Service {
  const log = options.log ?? pino({ level: config.logLevel, base: { role: config.role } });
  const parts = new Set(options.parts ?? PARTS_OF[config.role]);
  /** Stops of what has been started, run in reverse order of starting unless placed otherwise. */
  const stops: Array<{ phase: number; name: string; stop: () => Promise<unknown> }> = [];
  let starting: Promise<RunningService> | null = null;
  /** start() itself, without the clean-up of a failed start (which waits for stop()). */
  let startedWork: Promise<RunningService> | null = null;
  let stopping: Promise<void> | null = null;
  /** Aborted when the stop begins: an embedded PostgreSQL still starting is shut down then. */
  const stopAsked = new AbortController();

  const checkNotStopping = () => {
    if (stopping) throw new Error('the service was stopped while starting');
  };

  async function start(): Promise<RunningService> {
    let embedded: EmbeddedPostgres | null = null;
    let databaseUrl = config.databaseUrl;
    if (!databaseUrl) {
      const startingServer = startEmbeddedPostgres({
        dataDir: config.dataDir,
        signal: stopAsked.signal,
        // As soon as the server runs, before the rest of its start (the database's check): a
        // stop from then on stops it too, and a stop that came first fails the start, which
        // stops the server again rather than leave it to nobody.
        onServer: (server) => {
          stops.push({ phase: 4, name: 'embedded PostgreSQL', stop: () => server.stop() });
          options.onEmbedded?.(server);
          checkNotStopping();
        },
      });
      // A stop that comes before onServer shuts down the server still starting (signal); the
      // stop waits for that, as for the server's own stop, so the process does not exit (and
      // let the next start find a server going down) while it runs.
      stops.push({ phase: 4, name: 'embedded PostgreSQL start', stop: () => startingServer.catch(() => undefined) });
      embedded = await startingServer;
      databaseUrl = embedded.url;
      log.info({ dataDir: config.dataDir, port: embedded.port }, 'embedded PostgreSQL ready (DATABASE_URL not set)');
    }
    checkNotStopping();

    // pg-pool hangs the whole client (its queries' texts among them) on the error: only what
    // went wrong is logged.
    const lostConnection = (err: Error & { code?: string }) =>
      log.warn({ err: { type: err.name, message: err.message, code: err.code } }, 'idle database connection lost');
    const pool = createPool(databaseUrl, {
      max: options.poolSize ?? 20,
      applicationName: options.applicationName ?? `vidtrack-${config.role}`,
      onError: lostConnection,
    });
    stops.push({ phase: 3, name: 'database pool', stop: () => pool.end() });
    await migrate(pool, allMigrations);
    const clock = options.clock === 'read' ? await readServiceClock(pool) : (options.clock ?? (await startServiceClock(pool, config.timeScale)));
    if (config.timeScale !== 1 && !options.clock) log.info({ timeScale: config.timeScale, serviceTime: clock.now().toISOString() }, 'service clock runs faster than wall time');

    // EVENT_STORE picks the log (PostgreSQL in `pool`, or EventStoreDB); read models stay in `pool`.
    const store = createEventStore(config, pool, {
      onResubscribe: ({ reason, error, delayMs }) => log.warn({ err: error, reason, delayMs }, 'event store subscription replaced'),
    });
    stops.push({ phase: 3, name: 'event store', stop: () => store.close() });
    if (config.eventStore !== 'postgres') log.info({ eventStore: config.eventStore }, 'event log in EventStoreDB; read models in PostgreSQL');
    const watcher = new ProjectionWatcher();
    stops.push({ phase: 2, name: 'projection watcher', stop: () => watcher.close() });
    // A command-line tool collects nothing: it gets no platform clients (and no log about them).
    const collectors = options.collectors ?? (parts.size > 0 ? collectorsFromEnv(config, log) : createCollectorSet({ live: {}, fallbackToSimulator: false }));
    const metrics = new Metrics({ pool, clock, store });
    const activity = new CollectionActivity();
    const work: WorkDeps = { pool, store, collectors, clock, watcher, holder: options.holder ?? `scheduler-${randomUUID()}`, batchSize: options.batchSize ?? 5_000, activity };
    checkNotStopping();

    let runner: ProjectionRunner | null = null;
    let webhooks: WebhookReactor | null = null;
    // Every process that seals (API) or opens (dispatcher) endpoint secrets uses the same key.
    const secretBox = parts.has('api') || parts.has('projector') ? loadSecretBox(config.webhookKey, config.dataDir) : null;
    if (parts.has('projector')) {
      const projector = new ProjectionRunner(store, pool, projections, {
        schema: READ_SCHEMA,
        notifyChannel: CHECKPOINT_CHANNEL,
        onParked: (parked) => log.error(describeParked(parked), 'event parked: a projection cannot apply it; the read models go on without it'),
        onStandby: (reason) => log.info({ reason }, 'projector stands by'),
      });
      runner = projector;
      projector.position$.subscribe((position) => watcher.update(position));
      stops.push({ phase: 2, name: 'projection runner', stop: () => projector.stop() });
      await projector.start((err) => {
        options.onProjectionError?.(err);
        log.error({ err }, 'projection runner failed; starting again');
      });
      if (options.emails !== false) {
        const emails = new CompletionEmails(store, pool, watcher, { smtpUrl: config.smtpUrl, from: config.mailFrom, outbox: path.join(config.dataDir, 'mail') });
        stops.push({ phase: 1, name: 'completion e-mails', stop: () => emails.stop(STOP_WORK_MS) });
        // A first start that fails (database gone) retries by itself, as later failures do.
        await emails.start((err) => log.error({ err }, 'completion e-mail failed; retrying'));
      }
      if (options.webhooks !== false) {
        const sendPool = createPool(databaseUrl, {
          max: 4,
          applicationName: `${options.applicationName ?? `vidtrack-${config.role}`}-webhooks`,
          asyncCommit: true,
          onError: lostConnection,
        });
        stops.push({ phase: 3, name: 'webhook send pool', stop: () => sendPool.end() });
        const reactor = new WebhookReactor({
          store,
          pool,
          sendPool,
          watcher,
          clock,
          wall: systemClock,
          timeScale: config.timeScale,
          box: secretBox!,
          policy: webhookPolicy(config),
          mail: { smtpUrl: config.smtpUrl, from: config.mailFrom, outbox: path.join(config.dataDir, 'mail') },
          post: options.webhookPost,
          collecting: activity,
          retentionMs: config.webhookDeliveryRetentionDays * 86_400_000,
        });
        webhooks = reactor;
        stops.push({ phase: 1, name: 'webhooks', stop: () => reactor.stop(STOP_WORK_MS) });
        // Failures are retried by the reactor itself; a receiver's answer is never logged (it may echo secrets).
        await reactor.start((err) => log.error({ err }, 'webhook delivery failed; retrying'));
      }
    }
    // Read-your-writes follows whichever process projects (this one, or another while this one
    // stands by). The poll is the fallback for a lost NOTIFY, so it can be slow: it costs a
    // query every time it runs, idle or not.
    await watcher.follow(databaseUrl, pool, READ_SCHEMA, projections.map((p) => p.name), 5_000);
    checkNotStopping();

    let scheduler: Scheduler | null = null;
    if (parts.has('scheduler') && options.schedule !== 'manual') {
      const bree = new Scheduler(work, {
        timeScale: config.timeScale,
        onError: (job, err, retryInMs) => {
          metrics.jobFailures.inc({ job });
          log.error({ err, job, retryInMs }, 'scheduler round failed');
        },
        onRound: (job, _counts, perPlatform) => metrics.recordRound(job, perPlatform),
      });
      scheduler = bree;
      stops.push({ phase: 1, name: 'scheduler', stop: () => bree.stop(STOP_WORK_MS) });
      await bree.start();
    }

    // Only the projector holding the lock creates the read models (projections/versions.ts):
    // another role answers /health with 503 until they exist.
    let modelsReady = await readModelsReady(pool, READ_SCHEMA, projections);
    let readyCheck: NodeJS.Timeout | null = null;
    if (!modelsReady) {
      readyCheck = setInterval(() => {
        readModelsReady(pool, READ_SCHEMA, projections).then(
          (ready) => {
            if (!ready || !readyCheck) return;
            modelsReady = true;
            clearInterval(readyCheck);
            readyCheck = null;
          },
          (err: unknown) => log.warn({ err }, 'could not tell whether the read models exist yet'),
        );
      }, READY_CHECK_MS);
      stops.push({ phase: 0, name: 'read-model check', stop: async () => readyCheck && clearInterval(readyCheck) });
    }
    let started = false;
    const isReady = () => started && modelsReady && !stopping;

    let app: FastifyInstance | null = null;
    let apiUrl: string | null = null;
    let metricsUrl: string | null = null;
    if (parts.has('api')) {
      const reactor = webhooks;
      const webhookApi = { box: secretBox!, policy: webhookPolicy(config), kick: reactor ? () => reactor.dispatcher.kick() : undefined };
      const dashboard = {
        wall: systemClock,
        mail: { smtpUrl: config.smtpUrl, from: config.mailFrom, outbox: path.join(config.dataDir, 'mail') },
        baseUrl: () => config.publicUrl ?? apiUrl ?? `http://${config.host}:${config.port}`,
        onError: (err: unknown, what: string) => log.error({ err }, `dashboard: ${what} failed`),
      };
      const keyUsage = options.keyUsage === false ? undefined : new KeyUsageCounter(pool, clock, (err) => log.warn({ err }, 'key usage counters not flushed; kept for the next flush'));
      const api = await buildApp(
        { pool, store, collectors, clock, watcher, isReady, failedAuthLimit: config.failedAuthLimit, redisUrl: config.redisUrl, metrics, dashboard, keyUsage, webhooks: webhookApi },
        { logger: options.apiLog ?? apiLogger(config.logLevel), trustProxy: config.trustProxy },
      );
      app = api;
      stops.push({ phase: 1, name: 'API', stop: () => api.close() });
      if (options.listen !== false) {
        await api.listen({ host: config.host, port: config.port });
        apiUrl = urlOf(api.server.address());
        metricsUrl = apiUrl;
        log.info(`API at ${apiUrl}/api/v1`);
      }
    } else if (config.metricsPort !== null && parts.size > 0 && options.listen !== false) {
      // A role without the API still shows its metrics to Prometheus, and its health.
      const server = Fastify();
      server.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
      server.get('/health', healthHandler(isReady, pool));
      stops.push({ phase: 1, name: 'metrics server', stop: () => server.close() });
      await server.listen({ host: config.host, port: config.metricsPort });
      metricsUrl = urlOf(server.server.address());
      // Its URL is in service.json only when no API shares the DATA_DIR: said here as well.
      log.info(`metrics and health at ${metricsUrl}`);
    }
    checkNotStopping();
    started = true;
    if (options.serviceFile) {
      // PORT=0 / METRICS_PORT=0 let the OS choose: this file says which ports it chose. Roles
      // sharing the DATA_DIR share the file: the API's entry wins (src/service-file.ts).
      if (writeServiceFile(config.dataDir, { pid: process.pid, api: apiUrl, metrics: metricsUrl })) {
        stops.push({ phase: 0, name: 'service.json', stop: async () => removeServiceFile(config.dataDir) });
      }
    }
    return { databaseUrl, embedded, pool, store, watcher, clock, collectors, metrics, work, app, runner, scheduler, webhooks, apiUrl, metricsUrl, isReady };
  }

  async function stopAll(): Promise<void> {
    stopAsked.abort(new Error('the service was stopped while starting'));
    // A start under way is left to notice (checkNotStopping) or, stuck (a database that does
    // not answer), abandoned: what it had started is stopped below all the same.
    if (startedWork) await withDeadline(startedWork.catch(() => undefined), 1_000);
    const budget: Record<number, number> = { 0: 500, 1: STOP_WORK_MS + 300, 2: STOP_PROJECTOR_MS, 3: STOP_POOL_MS, 4: Number.POSITIVE_INFINITY };
    for (const phase of [0, 1, 2, 3, 4]) {
      const now = stops.filter((s) => s.phase === phase).reverse();
      await withDeadline(
        Promise.all(
          now.map((s) =>
            s.stop().catch((err: unknown) => log.warn({ err, part: s.name }, 'while stopping')),
          ),
        ),
        budget[phase]!,
        () => log.warn({ parts: now.map((s) => s.name), ms: budget[phase] }, 'parts did not stop in time; going on without them'),
      );
    }
    log.info('stopped');
  }

  return {
    start() {
      startedWork ??= start();
      starting ??= startedWork.catch(async (error: unknown) => {
        // What did start is stopped, so that a failed start leaves no server or timer behind.
        await (stopping ??= stopAll());
        throw error;
      });
      return starting;
    },
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
  };
}

function collectorsFromEnv(config: Config, log: Logger): CollectorSet {
  const live = liveCollectorsFromEnv(process.env, systemClock);
  if (live.missing.length > 0) {
    if (config.collectorFallback === 'simulator') log.info({ platforms: live.missing }, 'no API credentials for these platforms: live mode collects them from the simulator (COLLECTOR_FALLBACK=simulator)');
    else log.warn({ platforms: live.missing }, 'no API credentials for these platforms: tracking them in live mode answers 502');
  }
  return createCollectorSet({
    live: live.collectors,
    fallbackToSimulator: config.collectorFallback === 'simulator',
    resolveShortLink: live.collectors.tiktok ? live.resolveTikTokShortLink : undefined,
  });
}

async function withDeadline(promise: Promise<unknown>, ms: number, onLate?: () => void): Promise<void> {
  if (!Number.isFinite(ms)) return void (await promise);
  let timer: NodeJS.Timeout | undefined;
  const late = Symbol('late');
  const outcome = await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(() => resolve(late), ms)))]);
  clearTimeout(timer);
  if (outcome === late) onLate?.();
}
