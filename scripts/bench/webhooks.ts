// Webhook deliveries per second to a local receiver in a process of its own (1 endpoint, and 100 endpoints): recorded
// deliveries claimed, signed, POSTed and marked by the dispatcher (src/notify/webhooks), against
// the same receiver driven by a bare keep-alive HTTP client, 10 requests at a time (the most a
// single endpoint is ever given).
import { randomBytes } from 'node:crypto';
import { fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { systemClock } from '../../src/clock.ts';
import { createPool } from '../../src/db/pool.ts';
import { migrate } from '../../src/db/migrate.ts';
import { comparePositions, type EventStore } from '../../src/eventstore/port.ts';
import { newestCommittedOn } from '../../src/eventstore/postgres.ts';
import { allMigrations } from '../../src/migrations.ts';
import { readCheckpoint } from '../../src/notify/checkpoint.ts';
import { deliveryIdOf, expandBatches, recordDeliveries, type NewDelivery } from '../../src/notify/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { newWebhookSecret, SecretBox } from '../../src/notify/webhooks/secret-box.ts';
import { webhooksProjection } from '../../projections/webhooks.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import { createWebhookEndpoint } from '../../src/commands/webhook-commands.ts';
import { createDatabase, startBenchService, WEBHOOK_KEY, type BenchService } from './env.ts';
import { seedOrganizations, seedVideos } from './seed.ts';
import type { Benchmark, Figure } from './types.ts';

/** The receiver (webhooks/receiver.ts), in a child process; `count()` asks it how many POSTs it has had. */
async function receiver(): Promise<{ url: string; count: () => Promise<number>; close: () => Promise<void> }> {
  const child = fork(fileURLToPath(new URL('./webhooks/receiver.ts', import.meta.url)), { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const reply = () =>
    new Promise<{ port?: number; received?: number }>((resolve, reject) => {
      const failed = () => reject(new Error('the webhook receiver process ended'));
      child.once('exit', failed);
      child.once('message', (message) => {
        child.off('exit', failed);
        resolve(message as { port?: number; received?: number });
      });
    });
  const { port } = await reply();
  return {
    url: `http://127.0.0.1:${port}`,
    async count() {
      const answer = reply();
      child.send('count');
      return (await answer).received!;
    },
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}

/** The receiver's own pace: `total` bare POSTs over keep-alive, `concurrency` at a time. */
async function barePosts(url: string, total: number, concurrency: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify({ type: 'snapshot.created', timestamp: new Date().toISOString(), data: { pad: 'x'.repeat(400) } });
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        await new Promise<void>((resolve, reject) => {
          const request = http.request(`${url}/bare`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (response) => {
            response.resume();
            response.on('end', resolve);
          });
          request.on('error', reject);
          request.end(body);
        });
      }
    }),
  );
  agent.destroy();
  return total / ((performance.now() - t0) / 1000);
}

export const webhooksBenchmark: Benchmark = {
  name: 'webhooks',
  async run(context) {
    const url = await createDatabase(context.server, 'vidtrack_bench_webhooks');
    const pool = new pg.Pool({ connectionString: url, max: 20 });
    // An idle connection cut by the server (it stops at the end of the run) is no failure of the benchmark.
    pool.on('error', () => undefined);
    // The dispatcher's own connections, as the service gives it (src/service.ts).
    const sendPool = createPool(url, { max: 4, asyncCommit: true, onError: () => undefined });
    const sink = await receiver();
    try {
      await migrate(pool, allMigrations);
      await pool.query(webhooksProjection.ddl(READ_SCHEMA));
      const box = SecretBox.fromKey(randomBytes(32));
      const total = context.smoke ? 60 : 5_000;
      const limit = await barePosts(sink.url, total, 10);
      const figures: Figure[] = [];
      for (const endpoints of [1, 100]) {
        await pool.query(`TRUNCATE webhooks.deliveries, webhooks.delivery_batches, ${READ_SCHEMA}.webhook_endpoints`);
        const ids = Array.from({ length: endpoints }, (_, i) => `wh_bench_${endpoints}_${i}`);
        await pool.query(
          `INSERT INTO ${READ_SCHEMA}.webhook_endpoints (endpoint_id, org_id, mode, url, events, sealed_secret, created_at, updated_at, created_commit, created_prepare)
           SELECT id, 'org_bench_' || id, 'live', $2 || '/' || id, ARRAY['snapshot.created'], $3, now(), now(), 0, 0 FROM unnest($1::text[]) AS id`,
          [ids, sink.url, box.seal(newWebhookSecret())],
        );
        const now = systemClock.now();
        const body = JSON.stringify({ type: 'snapshot.created', timestamp: now.toISOString(), data: { pad: 'x'.repeat(400) } });
        const deliveries: NewDelivery[] = Array.from({ length: total }, (_, i) => {
          const endpointId = ids[i % endpoints]!;
          // A video per delivery: no order to wait for, so the figure is the sending itself.
          return { deliveryId: deliveryIdOf(`bench-${i}`, 'snapshot.created', endpointId), endpointId, orgId: `org_bench_${endpointId}`, eventId: `bench-${i}`, eventType: 'snapshot.created', videoId: `video-${i}`, body, createdAt: now };
        });
        const client = await pool.connect();
        try {
          await recordDeliveries(client, deliveries);
        } finally {
          client.release();
        }
        const before = await sink.count();
        const dispatcher = new WebhookDispatcher({
          pool,
          sendPool,
          store: {} as EventStore, // nothing is disabled: the receiver answers 204 to all
          clock: systemClock,
          wall: systemClock,
          timeScale: 1,
          box,
          policy: { allowHttpHosts: ['127.0.0.1'], allowPrivate: true },
          onError: (error) => context.log(`dispatcher error: ${String(error)}`),
        });
        const t0 = performance.now();
        dispatcher.kick();
        const deadline = Date.now() + 600_000;
        for (;;) {
          const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE status = 'delivered'`);
          if (rows[0]!.n >= total) break;
          if (Date.now() > deadline) throw new Error(`only ${rows[0]!.n} of ${total} webhook deliveries made in 10 minutes`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const seconds = (performance.now() - t0) / 1000;
        await dispatcher.stop(5_000);
        const got = (await sink.count()) - before;
        if (got < total) throw new Error(`the receiver got ${got} of ${total}`);
        const value = total / seconds;
        context.log(`${endpoints} endpoint(s): ${total} deliveries in ${seconds.toFixed(1)} s`);
        figures.push({
          figure: `webhook deliveries to a local receiver, ${endpoints} endpoint${endpoints > 1 ? 's' : ''} (${total.toLocaleString('en-US')})`,
          value,
          unit: '/s',
          limit,
          limitLabel: 'bare keep-alive POSTs, 10 at a time',
          target: '>= 1/4 of limit',
          met: context.smoke ? null : value >= limit / 4,
          notes: 'claimed, signed, sent, then marked together in PostgreSQL',
        });
      }
      figures.push(await collectionWithWebhooks(context, sink.url));
      return figures;
    } finally {
      await sink.close();
      await sendPool.end();
      await pool.end();
    }
  },
};

/**
 * One hour of collection for every video, until the read models and the webhook reactor have
 * caught up: snapshots per second, and (for the log) per second until collected and projected.
 */
async function collectHour(service: BenchService, videos: number): Promise<{ rate: number; projectedRate: number }> {
  service.clock.advance(HOUR_MS);
  const t0 = performance.now();
  let snapshots = 0;
  for (;;) {
    const round = await collectDue(service.work);
    snapshots += round.counts.get('SnapshotRecorded') ?? 0;
    if (round.claimed === 0) break;
  }
  await service.settle();
  const projected = performance.now() - t0;
  const head = await newestCommittedOn(service.pool);
  const deadline = Date.now() + 600_000;
  while (head) {
    const passed = await readCheckpoint(service.pool, 'webhooks.checkpoint');
    if (passed && comparePositions(passed, head) >= 0) break;
    if (Date.now() > deadline) throw new Error('the webhook reactor did not catch up in 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  if (snapshots !== videos) throw new Error(`expected ${videos} snapshots, collected ${snapshots}`);
  return { rate: snapshots / ((performance.now() - t0) / 1000), projectedRate: snapshots / (projected / 1000) };
}

/**
 * Collection with `snapshot.created` subscribed for every video (an endpoint per organization,
 * recording one delivery per snapshot and sending them meanwhile) against the hour before,
 * without endpoints.
 */
async function collectionWithWebhooks(context: Parameters<Benchmark['run']>[0], receiverUrl: string): Promise<Figure> {
  const videos = context.smoke ? 200 : 20_000;
  const service = await startBenchService(await createDatabase(context.server, 'vidtrack_bench_webhooks_collect'), {
    batchSize: context.smoke ? 100 : 5_000,
    env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' },
  });
  try {
    const orgs = await seedOrganizations(service.store, service.clock, 10);
    await seedVideos(service.store, service.clock, orgs, videos, { durationDays: 30, batch: 5_000 });
    await service.settle();
    // A first hour warms what a first hour warms (caches, plans), so the two measured hours
    // differ only in the endpoints.
    await collectHour(service, videos);
    const without = await collectHour(service, videos);
    const box = SecretBox.fromKey(Buffer.from(WEBHOOK_KEY, 'base64'));
    for (const org of orgs) {
      await createWebhookEndpoint(service.store, service.clock, box, { orgId: org.orgId, mode: 'live', url: `${receiverUrl}/${org.orgId}`, events: ['snapshot.created'], description: null });
    }
    await service.settle();
    const withHooks = await collectHour(service, videos);
    await expandBatches(service.pool);
    const { rows } = await service.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks.deliveries`);
    if (rows[0]!.n < videos) throw new Error(`expected ${videos} deliveries recorded, found ${rows[0]!.n}`);
    context.log(
      `collection of ${videos} videos: ${Math.round(without.rate)}/s without webhooks, ${Math.round(withHooks.rate)}/s with snapshot.created subscribed ` +
        `(collected and projected: ${Math.round(without.projectedRate)}/s and ${Math.round(withHooks.projectedRate)}/s)`,
    );
    return {
      figure: `snapshots collected with snapshot.created subscribed for every video (${videos.toLocaleString('en-US')})`,
      value: withHooks.rate,
      unit: '/s',
      limit: without.rate,
      limitLabel: 'the same hour without endpoints',
      target: '>= 0.8 of limit',
      met: context.smoke ? null : withHooks.rate >= 0.8 * without.rate,
      notes: 'deliveries recorded by the reactor, sent meanwhile',
    };
  } finally {
    await service.close();
  }
}
