// Prometheus metrics (prom-client): request rates and latencies, projection lag, snapshots
// collected and failed per platform, and the scheduler's backlog. Gauges that need the
// database are read when Prometheus scrapes, not on a timer.
import client from 'prom-client';
import type { Pool } from 'pg';
import type { Clock } from './clock.ts';
import type { JobName } from './collect/scheduler.ts';

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

  constructor(options: { pool: Pool; clock: Clock }) {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'vidtrack_' });
    const { pool, clock } = options;
    new client.Gauge({
      name: 'vidtrack_projection_lag_events',
      help: 'Events in the log that the read models have not applied yet, per projection',
      labelNames: ['projection'] as const,
      registers: [this.registry],
      async collect() {
        if (!(await hasPostgresLog(pool))) return;
        // Counted from each checkpoint to the newest event, capped: a rebuild's lag need not be exact.
        const { rows } = await pool.query<{ projection: string; lag: string }>(
          `SELECT c.projection, (SELECT count(*) FROM (SELECT 1 FROM es.events e
             WHERE (e.transaction_id, e.position) > (coalesce(c.commit_position, 0)::text::xid8, coalesce(c.prepare_position, 0)::bigint)
             LIMIT 1000000) behind) AS lag
           FROM rm.checkpoints c`,
        );
        this.reset();
        for (const row of rows) this.set({ projection: row.projection }, Number(row.lag));
      },
    });
    new client.Gauge({
      name: 'vidtrack_projection_lag_seconds',
      help: 'Age of the oldest event the read models have not applied yet (0 when caught up)',
      registers: [this.registry],
      async collect() {
        if (!(await hasPostgresLog(pool))) return;
        const { rows } = await pool.query<{ lag: number | null }>(
          `WITH c AS (SELECT commit_position, prepare_position FROM rm.checkpoints ORDER BY commit_position NULLS FIRST, prepare_position LIMIT 1)
           SELECT extract(epoch FROM now() - min(e.recorded_at))::float AS lag FROM es.events e, c
           WHERE (e.transaction_id, e.position) > (coalesce(c.commit_position, 0)::text::xid8, coalesce(c.prepare_position, 0)::bigint)`,
        );
        this.set(rows[0]?.lag ?? 0);
      },
    });
    new client.Gauge({
      name: 'vidtrack_scheduler_backlog_slots',
      help: 'Slots due now and not yet collected',
      registers: [this.registry],
      async collect() {
        const { rows } = await pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM rm.video_schedule WHERE status = 'monitoring' AND next_slot < total_slots AND next_slot_at <= $1`,
          [clock.now()],
        );
        this.set(Number(rows[0]!.n));
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

/** The lag gauges read the log's table, which exists only when the log is in PostgreSQL. */
async function hasPostgresLog(pool: Pool): Promise<boolean> {
  const { rows } = await pool.query<{ found: boolean }>(`SELECT to_regclass('es.events') IS NOT NULL AS found`);
  return rows[0]!.found;
}
