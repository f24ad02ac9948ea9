// HTTP benchmarks: the real API (buildApp on a service of its own, data made through the
// commands and the scheduler's rounds) under autocannon, against a bare Fastify server that
// serves the same bodies with no key, no rate limit and no database, measured with the same
// autocannon settings in the same run.
//
// autocannon runs in a worker thread of this process (its `workers` option): the client's
// parsing of responses then does not share the event loop of the server it measures.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import Fastify, { type FastifyInstance } from 'fastify';
import { HOUR_MS } from '../../src/clock.ts';
import { buildApp } from '../../src/api/app.ts';
import { KeyCache } from '../../src/api/key-cache.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { createDatabase, startBenchService, type BenchService } from './env.ts';
import { seedOrganizations, seedVideos, type SeededOrg } from './seed.ts';
import type { BenchContext, Benchmark, Figure } from './types.ts';

const API = '/api/v1';
const TRACK_REQUEST_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'track-request.cjs');

interface Load {
  connections: number;
  /** Seconds of measurement. */
  duration: number;
  /** Seconds of load before it, not measured (JIT, pools, caches). */
  warmup: number;
  sampleInt: number;
}

function loadOf(smoke: boolean): Load {
  return smoke ? { connections: 20, duration: 0.4, warmup: 0, sampleInt: 100 } : { connections: 64, duration: 10, warmup: 2, sampleInt: 1000 };
}

function describeLoad(load: Load): string {
  return `autocannon ${load.connections} connections, ${load.warmup} s warm-up then ${load.duration} s measured, 1 worker thread, no pipelining, keep-alive`;
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
}

interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A CommonJS module making each request (path; autocannon's worker requires it). */
  setupRequest?: string;
  /** Status counted as success (its count / duration is the figure); 200 unless told. */
  okStatus?: number;
}

function runAutocannon(target: Target, load: Load, seconds: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: target.url,
        method: target.method ?? 'GET',
        headers: target.headers,
        connections: load.connections,
        duration: seconds,
        sampleInt: load.sampleInt,
        workers: 1,
        timeout: 10,
        ...(target.setupRequest ? { requests: [{ setupRequest: target.setupRequest }] } : {}),
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function measure(target: Target, load: Load): Promise<Measured> {
  if (load.warmup > 0) await runAutocannon(target, load, load.warmup);
  const result = await runAutocannon(target, load, load.duration);
  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, (s as { count: number }).count]));
  const ok = statuses[String(target.okStatus ?? 200)] ?? 0;
  return {
    rps: ok / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

function summary(m: Measured): string {
  const statuses = Object.entries(m.statuses)
    .map(([code, n]) => `${code}: ${n}`)
    .join(', ');
  return `${Math.round(m.rps).toLocaleString('en-US')} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms (${statuses || 'no answers'}; errors ${m.errors}, timeouts ${m.timeouts})`;
}

/** Anything but the expected status, for the notes column. */
function oddities(m: Measured, okStatus = 200): string {
  const odd = Object.entries(m.statuses).filter(([code]) => code !== String(okStatus));
  const parts = odd.map(([code, n]) => `${n}x ${code}`);
  if (m.errors) parts.push(`${m.errors} errors`);
  if (m.timeouts) parts.push(`${m.timeouts} timeouts`);
  return parts.length ? `non-${okStatus}: ${parts.join(', ')}` : '';
}

async function listen(app: FastifyInstance): Promise<string> {
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  return address;
}

/** The real API on a bench service, as src/main.ts wires it (logging off, as buildApp's default). */
async function startApi(service: BenchService) {
  const keys = new KeyCache(service.pool);
  await keys.listen(service.url);
  const app = await buildApp({
    pool: service.pool,
    store: service.store,
    collectors: service.collectors,
    clock: service.clock,
    watcher: service.watcher,
    keys,
    isReady: () => true,
  });
  const base = await listen(app);
  return {
    app,
    base,
    async close() {
      await app.close();
      await keys.close();
    },
  };
}

/** A bare Fastify server: no hooks, no key, no database; each route answers with a fixed body. */
async function startBare(routes: Record<string, { bytes?: Buffer; object?: unknown }>) {
  const app = Fastify({ logger: false });
  for (const [url, body] of Object.entries(routes)) {
    if (body.bytes) {
      const bytes = body.bytes;
      app.get(url, async (_request, reply) => reply.type('application/json; charset=utf-8').send(bytes));
    } else {
      const object = body.object;
      app.get(url, async () => object);
    }
  }
  const base = await listen(app);
  return { base, close: () => app.close() };
}

async function fetchOk(url: string, apiKey: string): Promise<Buffer> {
  const response = await fetch(url, { headers: { 'x-api-key': apiKey } });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${bytes.toString().slice(0, 300)}`);
  return bytes;
}

function ratioFigure(
  context: BenchContext,
  figure: string,
  value: Measured,
  limit: Measured,
  limitLabel: string,
  okStatus = 200,
): Figure {
  return {
    figure,
    value: value.rps,
    unit: 'req/s',
    limit: limit.rps,
    limitLabel,
    target: '>= 0.5 x limit',
    met: context.smoke ? null : value.rps >= 0.5 * limit.rps,
    notes: oddities(value, okStatus),
  };
}

async function organization(service: BenchService): Promise<SeededOrg> {
  const [org] = await seedOrganizations(service.store, service.clock, 1);
  await service.settle();
  return org!;
}

/** `rounds` scheduler rounds, one service hour apart, each collecting every due slot. */
async function collectHours(context: BenchContext, service: BenchService, rounds: number): Promise<void> {
  const t0 = performance.now();
  for (let hour = 1; hour <= rounds; hour++) {
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    if (hour % 240 === 0) context.log(`  ${hour} hourly rounds collected`);
  }
  if (rounds > 0) context.log(`${rounds} hourly collection rounds in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

// ---- GET /videos/{id} -------------------------------------------------------------------

const getVideo: Benchmark = {
  name: 'http-get-video',
  async run(context) {
    const load = loadOf(context.smoke);
    const days = context.smoke ? 1 : 30;
    const service = await startBenchService(await createDatabase(context.server, 'bench_http_get'));
    const api = await startApi(service);
    try {
      const org = await organization(service);
      // Tracked through the API, then collected hour by hour by the scheduler's real rounds.
      const tracked = await api.app.inject({
        method: 'POST',
        url: `${API}/videos/track`,
        headers: { 'x-api-key': org.apiKey },
        payload: { video_link: 'https://www.youtube.com/watch?v=benchGetVid', duration_days: days },
      });
      if (tracked.statusCode !== 201) throw new Error(`track answered ${tracked.statusCode}: ${tracked.body}`);
      const videoId = tracked.json<{ id: string }>().id;
      await collectHours(context, service, days * 24 - 1);
      await service.settle();

      const url = `${api.base}${API}/videos/${videoId}`;
      const body = await fetchOk(url, org.apiKey);
      const snapshots = (JSON.parse(body.toString()) as { snapshots: unknown[] }).snapshots.length;
      context.log(`video ${videoId}: ${snapshots} snapshots, body ${body.length.toLocaleString('en-US')} bytes`);
      context.log(describeLoad(load));

      const bare = await startBare({ '/video': { bytes: body } });
      let limit: Measured;
      try {
        limit = await measure({ url: `${bare.base}/video` }, load);
      } finally {
        await bare.close();
      }
      context.log(`bare Fastify, same bytes: ${summary(limit)}`);
      const value = await measure({ url, headers: { 'x-api-key': org.apiKey } }, load);
      context.log(`API GET /videos/{id}:      ${summary(value)}`);

      return [
        ratioFigure(context, `GET /videos/{id} (${snapshots} snapshots)`, value, limit, 'bare Fastify, same bytes'),
        {
          figure: `GET /videos/{id} (${snapshots} snapshots) p99`,
          value: value.p99,
          unit: 'ms',
          limit: limit.p99,
          limitLabel: 'bare Fastify p99',
          target: '< 50 ms',
          met: context.smoke ? null : value.p99 < 50,
        },
      ];
    } finally {
      await api.close();
      await service.close();
    }
  },
};

// ---- GET /videos?limit=100 and GET /usage -------------------------------------------------

const listAndUsage: Benchmark = {
  name: 'http-list-usage',
  async run(context) {
    const load = loadOf(context.smoke);
    const videos = context.smoke ? 120 : 200;
    const hours = context.smoke ? 2 : 24;
    const service = await startBenchService(await createDatabase(context.server, 'bench_http_list'));
    const api = await startApi(service);
    try {
      const org = await organization(service);
      await seedVideos(service.store, service.clock, [org], videos, { durationDays: 30 });
      await service.settle();
      await collectHours(context, service, hours);
      await chargeUsage(service.work);
      await service.settle();

      const listUrl = `${api.base}${API}/videos?limit=100`;
      const usageUrl = `${api.base}${API}/usage`;
      const listBody = await fetchOk(listUrl, org.apiKey);
      const usageBody = await fetchOk(usageUrl, org.apiKey);
      context.log(
        `${videos} videos, ${hours} hourly rounds and a charge: list body ${listBody.length.toLocaleString('en-US')} bytes, usage ${usageBody.toString()}`,
      );
      context.log(describeLoad(load));

      const bare = await startBare({ '/list': { object: JSON.parse(listBody.toString()) }, '/usage': { object: JSON.parse(usageBody.toString()) } });
      let listLimit: Measured;
      let usageLimit: Measured;
      try {
        listLimit = await measure({ url: `${bare.base}/list` }, load);
        context.log(`bare Fastify JSON route, list body:  ${summary(listLimit)}`);
        usageLimit = await measure({ url: `${bare.base}/usage` }, load);
        context.log(`bare Fastify JSON route, usage body: ${summary(usageLimit)}`);
      } finally {
        await bare.close();
      }
      const headers = { 'x-api-key': org.apiKey };
      const list = await measure({ url: listUrl, headers }, load);
      context.log(`API GET /videos?limit=100: ${summary(list)}`);
      const usage = await measure({ url: usageUrl, headers }, load);
      context.log(`API GET /usage:            ${summary(usage)}`);

      const label = 'bare Fastify JSON route, same body';
      return [
        ratioFigure(context, 'GET /videos?limit=100', list, listLimit, label),
        ratioFigure(context, 'GET /usage', usage, usageLimit, label),
      ];
    } finally {
      await api.close();
      await service.close();
    }
  },
};

// ---- POST /videos/track -----------------------------------------------------------------

const track: Benchmark = {
  name: 'http-track',
  async run(context) {
    const load = loadOf(context.smoke);
    const service = await startBenchService(await createDatabase(context.server, 'bench_http_track'));
    const api = await startApi(service);
    try {
      const org = await organization(service);
      context.log(
        `live key, 1,000,000 USD; each request a new X/Twitter link (track-request.cjs), duration_days 1; every 201 waited for the read models (read-your-writes)`,
      );
      context.log(describeLoad(load));
      const value = await measure(
        {
          url: `${api.base}${API}/videos/track`,
          method: 'POST',
          headers: { 'x-api-key': org.apiKey, 'content-type': 'application/json' },
          setupRequest: TRACK_REQUEST_FILE,
          okStatus: 201,
        },
        load,
      );
      context.log(`API POST /videos/track: ${summary(value)}`);
      await service.settle();
      const { rows } = await service.pool.query<{ n: string }>(`SELECT count(*) AS n FROM es.events WHERE type = 'VideoTracked'`);
      context.log(`videos tracked in the log: ${rows[0]!.n} (warm-up included)`);
      return [
        {
          figure: 'POST /videos/track (read-your-writes)',
          value: value.rps,
          unit: 'req/s',
          limit: null,
          limitLabel: '-',
          target: '>= 1,000 req/s',
          met: context.smoke ? null : value.rps >= 1_000,
          notes: [`p99 ${value.p99} ms`, oddities(value, 201)].filter(Boolean).join('; '),
        },
      ];
    } finally {
      await api.close();
      await service.close();
    }
  },
};

export const httpBenchmarks: Benchmark[] = [getVideo, listAndUsage, track];
