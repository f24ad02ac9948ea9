// The ends of attempts, written together. One delivery's mark and its endpoint's health used to
// be a transaction of their own; every mark of an endpoint then waited on that endpoint's health
// row for the commit before it, so an endpoint was sent to at the pace of one commit per
// delivery (about 300/s), whatever its receiver could take. Now the attempts that end while a
// write is under way are written by the next write, in one statement, with each endpoint's
// health updated once per write. The dispatcher writes them in the transaction of its next claim
// (deliveries.ts), so a place freed at an endpoint is taken again in the same round trip.
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
  /** False when the service failed the delivery itself (its endpoint disabled or deleted): no send, so the endpoint's health is left as it is. */
  receiverCalled: boolean;
}

export interface MarkOutcome {
  /** False when the claim had lapsed and another sender took the delivery over: its answer counts. */
  marked: boolean;
  /** Service time since which every attempt to the endpoint has failed; null while it succeeds. */
  failingSince: Date | null;
  /** True when the write that marked it also claimed all that could be claimed then. */
  claimedAfter?: boolean;
}

export interface AttemptMark {
  claimed: Claimed;
  end: AttemptEnd;
}

/** Writes a batch of marks; answers the outcome of each delivery it marked (by delivery id). */
export type MarkWriter = (batch: readonly AttemptMark[]) => Promise<Map<string, MarkOutcome>>;

interface Waiting extends AttemptMark {
  resolve: (outcome: MarkOutcome) => void;
  reject: (error: unknown) => void;
}

/** Attempts written by one statement at most: a bound on its size, above the dispatcher's 200 sends in flight. */
const MAX_BATCH = 1_000;

export class AttemptMarks {
  private queue: Waiting[] = [];
  private writing: Promise<void> | null = null;

  constructor(private readonly write: MarkWriter) {}

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
          const outcomes = await this.write(batch);
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

/** The marks as the JSON document `markAttemptsSql` reads. */
export function markInput(batch: readonly AttemptMark[]): string {
  return JSON.stringify(
    batch.map(({ claimed, end }) => ({
      delivery_id: claimed.delivery_id,
      claim_token: claimed.claim_token,
      status: end.status,
      last_status: end.httpStatus,
      last_error: end.error,
      next_attempt_at: end.nextAttemptAt?.toISOString() ?? null,
      at: end.at.toISOString(),
      receiver_called: end.receiverCalled,
    })),
  );
}

/**
 * Marks the attempts of `input` (markInput's JSON: a parameter, or a literal inside a longer
 * text), only where the claim is still the sender's, and updates each endpoint's health: a
 * success in the batch clears it, unless a later failure follows; otherwise the first failure
 * since the last success is kept; a mark of no send (receiverCalled false) leaves it. Health
 * rows are taken in endpoint order, so two processes' writes cannot deadlock. Answers a row per
 * delivery marked. (The statement is a function of the schema, `webhooks/008` in schema.ts.)
 */
export const markAttemptsSql = (input: string) => `SELECT delivery_id, failing_since FROM webhooks.mark_attempts(${input}::json)`;

export interface MarkedRow {
  delivery_id: string;
  failing_since: Date | null;
}

export function markOutcomes(rows: readonly MarkedRow[]): Map<string, MarkOutcome> {
  return new Map(rows.map((r) => [r.delivery_id, { marked: true, failingSince: r.failing_since }]));
}

/** The marks alone, in a statement of their own. */
export async function markAttempts(pool: Pool, batch: readonly AttemptMark[]): Promise<Map<string, MarkOutcome>> {
  const { rows } = await pool.query<MarkedRow>(markAttemptsSql('$1'), [markInput(batch)]);
  return markOutcomes(rows);
}

/**
 * Starts an endpoint's 5 days of failures afresh: for an endpoint about to be enabled again, so
 * the failures from before it was disabled do not disable it again at its first failure since.
 * Called before the enable is appended: no send reaches a disabled endpoint meanwhile, so no
 * failure from before can come back after it.
 */
export async function clearFailingSince(pool: Pool, endpointId: string): Promise<void> {
  await pool.query(`UPDATE webhooks.endpoint_health SET failing_since = NULL WHERE endpoint_id = $1`, [endpointId]);
}
