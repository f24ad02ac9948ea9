// The ends of attempts, written together. One delivery's mark and its endpoint's health used to
// be a transaction of their own; every mark of an endpoint then waited on that endpoint's health
// row for the commit before it, so an endpoint was sent to at the pace of one commit per
// delivery (about 300/s), whatever its receiver could take. Now the attempts that end while a
// write is under way are written by the next write, in one statement, with each endpoint's
// health updated once per write.
import type { Pool } from 'pg';
import type { Claimed, DeliveryStatus } from './deliveries.ts';

export interface AttemptEnd {
  status: DeliveryStatus;
  httpStatus: number | null;
  error: string | null;
  /** Service time of the next attempt; null once delivered or failed. */
  nextAttemptAt: Date | null;
  /** Service time the attempt ended. */
  at: Date;
}

export interface MarkOutcome {
  /** False when the claim had lapsed and another sender took the delivery over: its answer counts. */
  marked: boolean;
  /** Service time since which every attempt to the endpoint has failed; null while it succeeds. */
  failingSince: Date | null;
}

interface Waiting {
  claimed: Claimed;
  end: AttemptEnd;
  resolve: (outcome: MarkOutcome) => void;
  reject: (error: unknown) => void;
}

/** Attempts written by one statement at most: a bound on its size, above the dispatcher's 200 sends in flight. */
const MAX_BATCH = 1_000;

export class AttemptMarks {
  private queue: Waiting[] = [];
  private writing: Promise<void> | null = null;

  constructor(private readonly pool: Pool) {}

  /** Records the end of an attempt; resolves once it is committed. */
  mark(claimed: Claimed, end: AttemptEnd): Promise<MarkOutcome> {
    return new Promise<MarkOutcome>((resolve, reject) => {
      this.queue.push({ claimed, end, resolve, reject });
      // A write under way takes the queue when it ends; else the next turn of the event loop
      // does, so the attempts that end together are written together.
      this.writing ??= new Promise<void>((ready) => setImmediate(ready)).then(() => this.writeAll());
    });
  }

  private async writeAll(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        try {
          const outcomes = await markAttempts(this.pool, batch);
          for (const waiting of batch) waiting.resolve(outcomes.get(waiting.claimed.delivery_id) ?? { marked: false, failingSince: null });
        } catch (error) {
          for (const waiting of batch) waiting.reject(error);
        }
      }
    } finally {
      this.writing = null;
    }
  }
}

/**
 * Marks the attempts (only where the claim is still the sender's) and updates each endpoint's
 * health: a success in the batch clears it, unless a later failure follows; otherwise the first
 * failure since the last success is kept. Health rows are taken in endpoint order, so two
 * processes' writes cannot deadlock.
 */
async function markAttempts(pool: Pool, batch: readonly Waiting[]): Promise<Map<string, MarkOutcome>> {
  const input = batch.map(({ claimed, end }) => ({
    delivery_id: claimed.delivery_id,
    claim_token: claimed.claim_token,
    status: end.status,
    last_status: end.httpStatus,
    last_error: end.error,
    next_attempt_at: end.nextAttemptAt?.toISOString() ?? null,
    at: end.at.toISOString(),
  }));
  const { rows } = await pool.query<{ delivery_id: string; failing_since: Date | null }>(
    `WITH input AS (
       SELECT * FROM json_to_recordset($1::json)
         AS i(delivery_id text, claim_token uuid, status text, last_status int, last_error text, next_attempt_at timestamptz, at timestamptz)
     ), marked AS (
       UPDATE webhooks.deliveries d SET status = i.status, last_status = i.last_status, last_error = i.last_error,
         next_attempt_at = i.next_attempt_at, delivered_at = CASE WHEN i.status = 'delivered' THEN i.at ELSE d.delivered_at END,
         claimed_until = NULL, claim_token = NULL
       FROM input i WHERE d.delivery_id = i.delivery_id AND d.claim_token = i.claim_token
       RETURNING d.delivery_id, d.endpoint_id, i.status, i.at
     ), successes AS (
       SELECT endpoint_id, max(at) FILTER (WHERE status = 'delivered') AS last_success FROM marked GROUP BY endpoint_id
     ), per_endpoint AS (
       SELECT m.endpoint_id, s.last_success,
         min(m.at) FILTER (WHERE m.status <> 'delivered' AND (s.last_success IS NULL OR m.at > s.last_success)) AS first_failure
       FROM marked m JOIN successes s USING (endpoint_id) GROUP BY m.endpoint_id, s.last_success
     ), health AS (
       INSERT INTO webhooks.endpoint_health AS h (endpoint_id, failing_since, last_success_at)
       SELECT endpoint_id, first_failure, last_success FROM per_endpoint ORDER BY endpoint_id
       ON CONFLICT (endpoint_id) DO UPDATE SET
         failing_since = CASE WHEN excluded.last_success_at IS NOT NULL THEN excluded.failing_since ELSE coalesce(h.failing_since, excluded.failing_since) END,
         last_success_at = greatest(h.last_success_at, excluded.last_success_at)
       RETURNING endpoint_id, failing_since
     )
     SELECT m.delivery_id, h.failing_since FROM marked m JOIN health h USING (endpoint_id)`,
    [JSON.stringify(input)],
  );
  return new Map(rows.map((r) => [r.delivery_id, { marked: true, failingSince: r.failing_since }]));
}
