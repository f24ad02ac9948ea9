// Prometheus metrics (prom-client): request rates and latencies, projection lag, parked events,
// snapshots collected and failed per platform, and the scheduler's backlog. Gauges that need the
// database are read when Prometheus scrapes, not on a timer.
import client from 'prom-client';
import type { Pool } from 'pg';
import { systemClock, type Clock } from './clock.ts';
import { dueSlotCount } from './collect/next-work.ts';
import type { JobName } from './collect/scheduler.ts';
import { comparePositions, type EventStore, type Position } from './eventstore/port.ts';

/** Most events the lag gauge counts behind a checkpoint. */
const LAG_CAP = 1_000_000;

export class Metrics {
  readonly registry = new client.Registry();

  readonly httpRequests = new client.Histogram({
    name: 'vidtrack_http_request_duration_seconds',
    help: 'HTTP requests by method, route and status, and how long they took',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly videoEvents = new client.Counter({
    name: 'vidtrack_collection_events_total',
    help: 'What collection appended, per platform and event (SnapshotRecorded, CollectionFailed, VideoErrored, VideoPaused)',
    labelNames: ['platform', 'event'] as const,
    registers: [this.registry],
  });

  readonly jobFailures = new client.Counter({
    name: 'vidtrack_scheduler_job_failures_total',
    help: 'Scheduler rounds that failed, per job',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

  /**
   * `store`: the log, read only through its port (either adapter); without it the lag gauges
   * are not reported. Checkpoints, parked events and the schedule are read models, in `pool`.
   */
  constructor(options: { pool: Pool; clock: Clock; store?: EventStore }) {
    // The event-loop delay is sampled by a timer: prom-client's default of every 10 ms woke an
    // idle service 100 times a second (0.75% of a core of the 1% it may use idle; H3, issue 9).
    client.collectDefaultMetrics({ register: this.registry, prefix: 'vidtrack_', eventLoopMonitoringPrecision: 100 });
    const { pool, clock, store } = options;
    if (store) {
      new client.Gauge({
        name: 'vidtrack_projection_lag_events',
        help: 'Events in the log that the read models have not applied yet, per projection',
        labelNames: ['projection'] as const,
        registers: [this.registry],
        async collect() {
          const checkpoints = await readCheckpoints(pool);
          // Capped: a rebuild's lag need not be exact.
          const lags = await Promise.all([...checkpoints].map(([, position]) => store.countEventsAfter(position, LAG_CAP)));
          this.reset();
          [...checkpoints.keys()].forEach((projection, i) => this.set({ projection }, lags[i]!));
        },
      });
      new client.Gauge({
        name: 'vidtrack_projection_lag_seconds',
        help: 'Age of the oldest event the read models have not applied yet (0 when caught up)',
        registers: [this.registry],
        async collect() {
          const checkpoints = [...(await readCheckpoints(pool)).values()];
          if (checkpoints.length === 0) return this.set(0);
          const behind = checkpoints.reduce((a, b) => (a === null || b === null ? null : comparePositions(a, b) <= 0 ? a : b));
          const [oldest] = await store.readAll(behind, 1);
          this.set(oldest ? Math.max(0, (systemClock.now().getTime() - oldest.recordedAt.getTime()) / 1000) : 0);
        },
      });
    }
    new client.Gauge({
      name: 'vidtrack_projection_parked_events',
      help: 'Events a projection could not apply and parked (npm run admin -- parked list), per projection',
      labelNames: ['projection'] as const,
      registers: [this.registry],
      async collect() {
        const { rows } = await pool.query<{ projection: string; n: number }>(`SELECT projection, count(*)::int AS n FROM rm.parked_events GROUP BY projection`);
        this.reset();
        for (const row of rows) this.set({ projection: row.projection }, row.n);
      },
    });
    new client.Gauge({
      name: 'vidtrack_scheduler_backlog_slots',
      help: 'Slots due now and not yet collected',
      registers: [this.registry],
      async collect() {
        this.set(await dueSlotCount(pool, clock.now()));
      },
    });
  }

  /** Counts what a collection round appended, from its per-platform tally. */
  recordRound(job: JobName, perPlatform: Map<string, number> | undefined): void {
    if (job !== 'collect' || !perPlatform) return;
    for (const [key, n] of perPlatform) {
      const [platform, event] = key.split(':') as [string, string];
      this.videoEvents.inc({ platform, event }, n);
    }
  }
}

/** Each projection's checkpoint (null: nothing applied yet). */
async function readCheckpoints(pool: Pool): Promise<Map<string, Position | null>> {
  const { rows } = await pool.query<{ projection: string; commit_position: string | null; prepare_position: string | null }>(
    `SELECT projection, commit_position, prepare_position FROM rm.checkpoints ORDER BY projection`,
  );
  return new Map(rows.map((r) => [r.projection, r.commit_position === null ? null : { commit: BigInt(r.commit_position), prepare: BigInt(r.prepare_position!) }]));
}
