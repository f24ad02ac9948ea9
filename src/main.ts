// Composition root. Roles: all (default), api, projector, scheduler: `npm start [-- ROLE]`.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Fastify from 'fastify';
import pino from 'pino';
import { systemClock } from './clock.ts';
import { apiLogger, buildApp } from './api/app.ts';
import { createCollectorSet } from './collect/collectors.ts';
import { liveCollectorsFromEnv } from './collect/collectors/from-env.ts';
import { Scheduler } from './collect/scheduler.ts';
import { loadConfig } from './config.ts';
import { Metrics } from './metrics.ts';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './db/embedded.ts';
import { migrate } from './db/migrate.ts';
import { allMigrations } from './db/schema.ts';
import { createPool } from './db/pool.ts';
import { startServiceClock } from './db/service-clock.ts';
import { removeServiceFile, urlOf, writeServiceFile } from './service-file.ts';
import { createEventStore } from './eventstore/create.ts';
import { CompletionEmails } from './notify/completion-email.ts';
import { READ_SCHEMA, projections } from '../projections/index.ts';
import { ProjectionRunner, ensureReadModels } from '../projections/runner.ts';
import { CHECKPOINT_CHANNEL, ProjectionWatcher } from '../projections/watcher.ts';

const config = loadConfig();
const log = pino({ level: config.logLevel, base: { role: config.role } });
const runs = (role: 'api' | 'projector' | 'scheduler') => config.role === 'all' || config.role === role;

let embedded: EmbeddedPostgres | null = null;
let databaseUrl = config.databaseUrl;
if (!databaseUrl) {
  embedded = await startEmbeddedPostgres({ dataDir: config.dataDir });
  databaseUrl = embedded.url;
  log.info({ dataDir: config.dataDir, port: embedded.port }, 'embedded PostgreSQL ready (DATABASE_URL not set)');
}

const pool = createPool(databaseUrl, { max: 20, applicationName: `vidtrack-${config.role}`, onError: (err) => log.warn({ err }, 'idle database connection lost') });
await migrate(pool, allMigrations);
await ensureReadModels(pool, READ_SCHEMA, projections);
const clock = await startServiceClock(pool, config.timeScale);
if (config.timeScale !== 1) log.info({ timeScale: config.timeScale, serviceTime: clock.now().toISOString() }, 'service clock runs faster than wall time');

// EVENT_STORE picks the log (PostgreSQL in `pool`, or EventStoreDB); read models stay in `pool`.
const store = createEventStore(config, pool, {
  onResubscribe: ({ reason, error, delayMs }) => log.warn({ err: error, reason, delayMs }, 'event store subscription replaced'),
});
if (config.eventStore !== 'postgres') log.info({ eventStore: config.eventStore }, 'event log in EventStoreDB; read models in PostgreSQL');
const watcher = new ProjectionWatcher();
const live = liveCollectorsFromEnv(process.env, systemClock);
const collectors = createCollectorSet({
  live: live.collectors,
  fallbackToSimulator: config.collectorFallback === 'simulator',
  resolveShortLink: live.collectors.tiktok ? live.resolveTikTokShortLink : undefined,
});
if (live.missing.length > 0) {
  if (config.collectorFallback === 'simulator') log.info({ platforms: live.missing }, 'no API credentials for these platforms: live mode collects them from the simulator (COLLECTOR_FALLBACK=simulator)');
  else log.warn({ platforms: live.missing }, 'no API credentials for these platforms: tracking them in live mode answers 502');
}

const stops: Array<() => Promise<void> | void> = [];
let ready = false;
let apiUrl: string | null = null;
let metricsUrl: string | null = null;

if (runs('projector')) {
  const runner = new ProjectionRunner(store, pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
  runner.position$.subscribe((position) => watcher.update(position));
  await runner.start((err) => log.error({ err }, 'projection runner failed; starting again'));
  if (!runner.active) log.info('another process projects these read models: this one stands by');
  const emails = new CompletionEmails(store, pool, watcher, { smtpUrl: config.smtpUrl, from: config.mailFrom, outbox: path.join(config.dataDir, 'mail') });
  await emails.start((err) => log.error({ err }, 'completion e-mail failed; retrying'));
  stops.push(() => emails.stop(), () => runner.stop());
}
// Read-your-writes follows whichever process projects (this one, or another while this one stands by).
await watcher.follow(databaseUrl, pool, READ_SCHEMA, projections.map((p) => p.name));
stops.push(() => watcher.close());

const metrics = new Metrics({ pool, clock });

if (runs('scheduler')) {
  const scheduler = new Scheduler(
    { pool, store, collectors, clock, watcher, holder: `scheduler-${randomUUID()}`, batchSize: 5_000 },
    {
      timeScale: config.timeScale,
      onError: (job, err) => {
        metrics.jobFailures.inc({ job });
        log.error({ err, job }, 'scheduler round failed');
      },
      onRound: (job, _counts, perPlatform) => metrics.recordRound(job, perPlatform),
    },
  );
  await scheduler.start();
  stops.unshift(() => scheduler.stop());
}

if (runs('api')) {
  const app = await buildApp(
    { pool, store, collectors, clock, watcher, isReady: () => ready, failedAuthLimit: config.failedAuthLimit, redisUrl: config.redisUrl, metrics },
    { logger: apiLogger(config.logLevel) },
  );
  await app.listen({ host: config.host, port: config.port });
  apiUrl = urlOf(app.server.address());
  metricsUrl = apiUrl;
  log.info(`API at ${apiUrl}/api/v1`);
  stops.unshift(() => app.close());
} else if (config.metricsPort !== null) {
  // A role without the API still shows its metrics to Prometheus, and its health.
  const server = Fastify();
  server.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  server.get('/health', async (_request, reply) => reply.code(ready ? 200 : 503).send({ status: ready ? 'ok' : 'starting' }));
  await server.listen({ host: config.host, port: config.metricsPort });
  metricsUrl = urlOf(server.server.address());
  stops.push(() => server.close());
}
ready = true;
// PORT=0 / METRICS_PORT=0 let the OS choose: this file says which ports it chose.
writeServiceFile(config.dataDir, { pid: process.pid, api: apiUrl, metrics: metricsUrl });

let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  removeServiceFile(config.dataDir);
  for (const stop of stops) await Promise.resolve(stop()).catch((err) => log.warn({ err }, 'while stopping'));
  await store.close();
  await pool.end();
  await embedded?.stop();
  log.info('stopped');
}
process.once('SIGINT', () => void shutdown());
process.once('SIGTERM', () => void shutdown());
