// HTTP benchmarks: the real API (the api role composed by createService on the bench
// service's database; data made through the commands and the scheduler's rounds) under
// autocannon, against a bare Fastify server on the API's paths that answers each request with
// the bytes and headers the API sent for it (fetched once from the API before measuring) and
// does nothing else but check that a key header is there: no key lookup, no rate limit, no
// schema, no database. Both are measured with the same autocannon settings and the same
// request headers in the same run. POST /videos/track (a write, answered once read-your-writes
// holds) has no such limit: its figure is absolute.
//
// autocannon runs in a worker thread of this process (load-generator.cjs), which stays up from
// the warm-up to the last slice: the client's parsing of responses then does not share the
// event loop of the server it measures, and its code is compiled once, not per slice. The
// targets compared are measured in alternating slices, so that other load on the machine
// weighs on both alike; each line also says how busy the machine was and what an answer
// cost the server's main thread and PostgreSQL, so that a missed target shows its cause.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance as nodePerformance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type autocannon from 'autocannon';
import Fastify, { type FastifyInstance } from 'fastify';
import type pg from 'pg';
import { HOUR_MS } from '../../src/clock.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { createDatabase, startBenchApi, startBenchService, type BenchService } from './env.ts';
import { seedOrganizations, seedVideos, type SeededOrg } from './seed.ts';
import type { BenchContext, Benchmark, Figure } from './types.ts';

const API = '/api/v1';
const HERE = path.dirname(fileURLToPath(import.meta.url));
const TRACK_REQUEST_FILE = path.join(HERE, 'track-request.cjs');

interface Load {
  connections: number;
  /** Seconds measured per target, in `rounds` slices alternating between the targets compared. */
  duration: number;
  rounds: number;
  /** Seconds of load on each target before it is measured (JIT, pools, caches). */
  warmup: number;
  sampleInt: number;
}

function loadOf(smoke: boolean): Load {
  return smoke
    ? { connections: 20, duration: 0.3, rounds: 1, warmup: 0, sampleInt: 100 }
    : { connections: 64, duration: 10, rounds: 5, warmup: 2, sampleInt: 1000 };
}

function describeLoad(load: Load): string {
  const slices = load.rounds > 1 ? ` in ${load.rounds} slices of ${load.duration / load.rounds} s alternating with the limit's` : '';
  return `autocannon in a worker thread that stays up across runs: ${load.connections} connections, keep-alive, no pipelining; ${load.warmup} s warm-up, then ${load.duration} s measured${slices}`;
}

interface Measured {
  rps: number;
  /** Worst p50 and p99 of the slices, in ms (autocannon counts 2xx answers only). */
  p50: number;
  p99: number;
  ok: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Share of the machine's CPU time busy while measured (this process, PostgreSQL and anything else running). */
  machineBusy: number;
  /** Event-loop busy time of this process's main thread (the server) per answer, in ms. */
  serverMs: number;
  /** CPU time of the PostgreSQL server's processes per answer, in ms (null where /proc is not readable). */
  postgresMs: number | null;
}

interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A CommonJS module exporting the function that makes each request (its path: the client thread requires it). */
  setupRequest?: string;
  /** Status counted as success (its count / duration is the figure); 200 unless told. */
  okStatus?: number;
}

/** What the client thread reports of a run. */
type RunResult = Pick<autocannon.Result, 'duration' | 'errors' | 'timeouts' | 'statusCodeStats' | 'latency'>;

/** autocannon in a worker thread that stays up until closed (load-generator.cjs). */
class LoadGenerator {
  private readonly worker = new Worker(path.join(HERE, 'load-generator.cjs'), { execArgv: [] });
  private readonly pending = new Map<number, { resolve: (result: RunResult) => void; reject: (error: Error) => void }>();
  private nextId = 0;

  constructor() {
    this.worker.on('message', ({ id, result, error }: { id: number; result?: RunResult; error?: string }) => {
      const run = this.pending.get(id);
      this.pending.delete(id);
      if (error !== undefined) run?.reject(new Error(`autocannon: ${error}`));
      else run?.resolve(result!);
    });
    const fail = (error: Error) => {
      for (const run of this.pending.values()) run.reject(error);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`the load generator's thread exited (code ${code})`)));
  }

  run(target: Target, load: Load, seconds: number): Promise<RunResult> {
    const options: autocannon.Options = {
      url: target.url,
      method: target.method ?? 'GET',
      headers: target.headers,
      connections: load.connections,
      duration: seconds,
      sampleInt: load.sampleInt,
      timeout: 10,
    };
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, options, setupRequest: target.setupRequest });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

function machineTimes(): { idle: number; total: number } {
  let idle = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    idle += cpu.times.idle;
    total += cpu.times.idle + cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq;
  }
  return { idle, total };
}

/** CPU ms used so far by the PostgreSQL server behind `pool` (its postmaster's children), or null off Linux. */
async function postgresCpuMeter(pool: pg.Pool): Promise<(() => number) | null> {
  const statOf = (pid: string | number) => {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  };
  try {
    const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const postmaster = statOf(rows[0]!.pid)[1]!;
    return () => {
      let ticks = 0;
      for (const pid of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(pid)) continue;
        try {
          const fields = statOf(pid);
          if (fields[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
        } catch {
          // The process ended while we looked.
        }
      }
      return ticks * 10; // USER_HZ is 100 on Linux
    };
  } catch {
    return null;
  }
}

interface Tally {
  ok: number;
  seconds: number;
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  idle: number;
  total: number;
  serverMs: number;
  postgresMs: number;
}

/**
 * Measures the targets in alternating slices (A B A B ...), so that whatever else runs on
 * the machine weighs on each alike; each target is warmed up first.
 */
async function measureAlternately(targets: Target[], load: Load, postgresCpu: (() => number) | null): Promise<Measured[]> {
  const client = new LoadGenerator();
  try {
    return await measureWith(client, targets, load, postgresCpu);
  } finally {
    await client.close();
  }
}

async function measureWith(client: LoadGenerator, targets: Target[], load: Load, postgresCpu: (() => number) | null): Promise<Measured[]> {
  if (load.warmup > 0) for (const target of targets) await client.run(target, load, load.warmup);
  const tallies: Tally[] = targets.map(() => ({ ok: 0, seconds: 0, p50: 0, p99: 0, statuses: {}, errors: 0, timeouts: 0, idle: 0, total: 0, serverMs: 0, postgresMs: 0 }));
  for (let round = 0; round < load.rounds; round++) {
    for (const [i, target] of targets.entries()) {
      const tally = tallies[i]!;
      const machine0 = machineTimes();
      const loop0 = nodePerformance.eventLoopUtilization();
      const postgres0 = postgresCpu?.() ?? 0;
      const result = await client.run(target, load, load.duration / load.rounds);
      tally.postgresMs += (postgresCpu?.() ?? 0) - postgres0;
      tally.serverMs += nodePerformance.eventLoopUtilization(loop0).active;
      const machine1 = machineTimes();
      tally.idle += machine1.idle - machine0.idle;
      tally.total += machine1.total - machine0.total;
      for (const [code, s] of Object.entries(result.statusCodeStats ?? {})) tally.statuses[code] = (tally.statuses[code] ?? 0) + s.count;
      tally.ok += result.statusCodeStats?.[String(target.okStatus ?? 200)]?.count ?? 0;
      tally.seconds += result.duration;
      tally.p50 = Math.max(tally.p50, result.latency.p50);
      tally.p99 = Math.max(tally.p99, result.latency.p99);
      tally.errors += result.errors;
      tally.timeouts += result.timeouts;
    }
  }
  return tallies.map((t) => ({
    rps: t.ok / t.seconds,
    p50: t.p50,
    p99: t.p99,
    ok: t.ok,
    statuses: t.statuses,
    errors: t.errors,
    timeouts: t.timeouts,
    machineBusy: t.total > 0 ? 1 - t.idle / t.total : 0,
    serverMs: t.serverMs / Math.max(1, t.ok),
    postgresMs: postgresCpu ? t.postgresMs / Math.max(1, t.ok) : null,
  }));
}

function summary(m: Measured): string {
  const statuses = Object.entries(m.statuses)
    .map(([code, n]) => `${code}: ${n}`)
    .join(', ');
  const cpu = `machine CPU ${Math.round(m.machineBusy * 100)}% busy, server main thread ${m.serverMs.toFixed(3)} ms/answer${m.postgresMs === null ? '' : `, PostgreSQL ${m.postgresMs.toFixed(3)} ms/answer`}`;
  return `${Math.round(m.rps).toLocaleString('en-US')} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms (${statuses || 'no answers'}; errors ${m.errors}, timeouts ${m.timeouts}); ${cpu}`;
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

/** The real API on a bench service, composed as src/main.ts composes it (its own process role, same database). */
const startApi = startBenchApi;

/** One answer of the API as it went over the wire: its body and the headers it chose. */
interface Answer {
  bytes: Buffer;
  headers: Record<string, string>;
}

/**
 * Headers every Node HTTP server writes for itself on each response (the bare server's too):
 * left to Node, not copied. Everything else the API sent (content type, Link, ...) is copied.
 */
const CONNECTION_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/**
 * A bare Fastify server: no hooks, no plugins, no schema, no database. Each route is the
 * API's own path (the same router and query-string work), checks that the request carries
 * an API key (reading a header is what any server with keys must do; looking the key up is
 * the API's work) and answers with the bytes and headers the API sent for that request.
 */
async function startBare(routes: { path: string; answer: Answer }[]) {
  const app = Fastify({ logger: false });
  for (const { path: routePath, answer } of routes) {
    const { bytes, headers } = answer;
    app.get(routePath, async (request, reply) => {
      if (typeof request.headers['x-api-key'] !== 'string') return reply.code(401).send();
      return reply.headers(headers).send(bytes);
    });
  }
  const base = await listen(app);
  return { base, close: () => app.close() };
}

/** GETs `url` with the key once, for the bare server to repeat (200 expected). */
async function fetchAnswer(url: string, apiKey: string): Promise<Answer> {
  const response = await fetch(url, { headers: { 'x-api-key': apiKey } });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${bytes.toString().slice(0, 300)}`);
  if (response.headers.has('content-encoding')) throw new Error(`GET ${url}: answered ${response.headers.get('content-encoding')}, not the bytes sent`);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!CONNECTION_HEADERS.has(name)) headers[name] = value;
  });
  return { bytes, headers };
}

/** Fails unless the bare server answers `url` with the API's body and headers, byte for byte. */
async function assertSameAnswer(url: string, apiKey: string, api: Answer): Promise<void> {
  const bare = await fetchAnswer(url, apiKey);
  const same = bare.bytes.equals(api.bytes) && JSON.stringify(Object.entries(bare.headers).sort()) === JSON.stringify(Object.entries(api.headers).sort());
  if (!same) throw new Error(`the bare server's answer to ${url} differs from the API's: ${JSON.stringify(bare.headers)} vs ${JSON.stringify(api.headers)}`);
}

/** For the log: what the bare server repeats. */
function describeAnswer(answer: Answer): string {
  return `${answer.bytes.length.toLocaleString('en-US')} bytes, headers ${Object.keys(answer.headers).join(', ')}`;
}

async function fetchOk(url: string, apiKey: string): Promise<Buffer> {
  return (await fetchAnswer(url, apiKey)).bytes;
}

/** What one answer cost, for the notes: where the time goes when a target is missed. */
function cpuNote(m: Measured): string {
  return `CPU/answer: server ${m.serverMs.toFixed(2)} ms${m.postgresMs === null ? '' : `, PostgreSQL ${m.postgresMs.toFixed(2)} ms`}; machine ${Math.round(m.machineBusy * 100)}% busy`;
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
    notes: [cpuNote(value), oddities(value, okStatus)].filter(Boolean).join('; '),
  };
}

async function organization(service: BenchService): Promise<SeededOrg> {
  const [org] = await seedOrganizations(service.store, service.clock, 1);
  await service.settle();
  return org!;
}

/** `rounds` scheduler rounds, one service hour apart, each collecting every due slot. */
export async function collectHours(context: BenchContext, service: BenchService, rounds: number): Promise<void> {
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

      const videoPath = `${API}/videos/${videoId}`;
      const url = `${api.base}${videoPath}`;
      const answer = await fetchAnswer(url, org.apiKey);
      const snapshots = (JSON.parse(answer.bytes.toString()) as { snapshots: unknown[] }).snapshots.length;
      context.log(`video ${videoId}: ${snapshots} snapshots; the API's answer, repeated by the bare server: ${describeAnswer(answer)}`);
      context.log(describeLoad(load));

      const bare = await startBare([{ path: `${API}/videos/:id`, answer }]);
      const headers = { 'x-api-key': org.apiKey };
      await assertSameAnswer(`${bare.base}${videoPath}`, org.apiKey, answer);
      let limit: Measured;
      let value: Measured;
      try {
        [limit, value] = await measureAlternately(
          [{ url: `${bare.base}${videoPath}`, headers }, { url, headers }],
          load,
          await postgresCpuMeter(service.pool),
        );
      } finally {
        await bare.close();
      }
      context.log(`bare Fastify, same bytes: ${summary(limit!)}`);
      context.log(`API GET /videos/{id}:      ${summary(value!)}`);

      return [
        ratioFigure(context, `GET /videos/{id} (${snapshots} snapshots)`, value!, limit!, 'bare Fastify, same bytes'),
        {
          figure: `GET /videos/{id} (${snapshots} snapshots) p99`,
          value: value!.p99,
          unit: 'ms',
          limit: limit!.p99,
          limitLabel: 'bare Fastify p99',
          target: '< 50 ms',
          met: context.smoke ? null : value!.p99 < 50,
          notes: 'worst slice',
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

      const listPath = `${API}/videos?limit=100`;
      const usagePath = `${API}/usage`;
      const listAnswer = await fetchAnswer(`${api.base}${listPath}`, org.apiKey);
      const usageAnswer = await fetchAnswer(`${api.base}${usagePath}`, org.apiKey);
      context.log(`${videos} videos, ${hours} hourly rounds and a charge; the API's answers, repeated by the bare server:`);
      context.log(`  list ${describeAnswer(listAnswer)}`);
      context.log(`  usage ${describeAnswer(usageAnswer)}: ${usageAnswer.bytes.toString()}`);
      context.log(describeLoad(load));

      const bare = await startBare([
        { path: `${API}/videos`, answer: listAnswer },
        { path: usagePath, answer: usageAnswer },
      ]);
      const headers = { 'x-api-key': org.apiKey };
      await assertSameAnswer(`${bare.base}${listPath}`, org.apiKey, listAnswer);
      await assertSameAnswer(`${bare.base}${usagePath}`, org.apiKey, usageAnswer);
      const postgresCpu = await postgresCpuMeter(service.pool);
      let listLimit: Measured, list: Measured, usageLimit: Measured, usage: Measured;
      try {
        [listLimit, list] = await measureAlternately([{ url: `${bare.base}${listPath}`, headers }, { url: `${api.base}${listPath}`, headers }], load, postgresCpu);
        [usageLimit, usage] = await measureAlternately([{ url: `${bare.base}${usagePath}`, headers }, { url: `${api.base}${usagePath}`, headers }], load, postgresCpu);
      } finally {
        await bare.close();
      }
      context.log(`bare Fastify, same bytes, list:  ${summary(listLimit!)}`);
      context.log(`API GET /videos?limit=100:       ${summary(list!)}`);
      context.log(`bare Fastify, same bytes, usage: ${summary(usageLimit!)}`);
      context.log(`API GET /usage:                  ${summary(usage!)}`);

      const label = 'bare Fastify, same bytes';
      return [
        ratioFigure(context, 'GET /videos?limit=100', list!, listLimit!, label),
        ratioFigure(context, 'GET /usage', usage!, usageLimit!, label),
      ];
    } finally {
      await api.close();
      await service.close();
    }
  },
};

// ---- the dashboard's per-key counters -----------------------------------------------------

const keyCounters: Benchmark = {
  name: 'http-key-counters',
  async run(context) {
    const load = loadOf(context.smoke);
    const service = await startBenchService(await createDatabase(context.server, 'bench_http_counters'));
    // Two API processes' worth on one database: one counting each key's requests, one not.
    const counting = await startApi(service);
    const plain = await startApi(service, { keyUsage: false });
    try {
      const org = await organization(service);
      const headers = { 'x-api-key': org.apiKey };
      await fetchOk(`${counting.base}${API}/usage`, org.apiKey);
      const postgresCpu = await postgresCpuMeter(service.pool);
      const [off, on] = await measureAlternately([{ url: `${plain.base}${API}/usage`, headers }, { url: `${counting.base}${API}/usage`, headers }], load, postgresCpu);
      context.log(`GET /usage, key counters off: ${summary(off!)}`);
      context.log(`GET /usage, key counters on:  ${summary(on!)}`);
      return [
        {
          figure: 'GET /usage with the dashboard\'s key counters on',
          value: on!.rps,
          unit: 'req/s',
          limit: off!.rps,
          limitLabel: 'the same API with the counters off',
          target: '>= 0.95 x limit',
          met: context.smoke ? null : on!.rps >= 0.95 * off!.rps,
          notes: [cpuNote(on!), oddities(on!)].filter(Boolean).join('; '),
        },
      ];
    } finally {
      await counting.close();
      await plain.close();
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
      const [value] = await measureAlternately(
        [
          {
            url: `${api.base}${API}/videos/track`,
            method: 'POST',
            headers: { 'x-api-key': org.apiKey, 'content-type': 'application/json' },
            setupRequest: TRACK_REQUEST_FILE,
            okStatus: 201,
          },
        ],
        load,
        await postgresCpuMeter(service.pool),
      );
      context.log(`API POST /videos/track: ${summary(value!)}`);
      await service.settle();
      const { rows } = await service.pool.query<{ n: string }>(`SELECT count(*) AS n FROM rm.videos`);
      context.log(`videos in the read model afterwards: ${rows[0]!.n} (warm-up and answers cut off at the end of a slice included)`);
      return [
        {
          figure: 'POST /videos/track (read-your-writes)',
          value: value!.rps,
          unit: 'req/s',
          limit: null,
          limitLabel: '-',
          target: '>= 2,000 req/s',
          met: context.smoke ? null : value!.rps >= 2_000,
          notes: [`p99 ${value!.p99} ms`, cpuNote(value!), oddities(value!, 201)].filter(Boolean).join('; '),
        },
      ];
    } finally {
      await api.close();
      await service.close();
    }
  },
};

export const httpBenchmarks: Benchmark[] = [getVideo, listAndUsage, track, keyCounters];
