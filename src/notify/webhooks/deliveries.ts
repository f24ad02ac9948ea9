// The deliveries table (webhooks.deliveries): recorded by the reactor (in batches, made rows
// before anything reads them), claimed here and marked (marks.ts) by the dispatcher around each
// send (never inside a transaction that stays open during the send), listed, replayed and
// recovered by the API.
import { hash } from 'node:crypto';
import pg, { type ClientBase, type Pool } from 'pg';
import type { WebhookEndpointRow } from '../../../projections/queries.ts';
import { markAttemptsSql, markInput, markOutcomes, type AttemptMark, type MarkedRow, type MarkOutcome } from './marks.ts';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface NewDelivery {
  deliveryId: string;
  endpointId: string;
  orgId: string;
  eventId: string;
  eventType: string;
  videoId: string | null;
  body: string;
  createdAt: Date;
}

/**
 * `msg_...`: a function of the log event, the webhook event type and the endpoint, so a
 * re-recorded event keeps its webhook-id (one log event can cause two types: a snapshot that
 * is also the fall below the low-balance threshold).
 */
export function deliveryIdOf(eventId: string, type: string, endpointId: string): string {
  return `msg_${hash('sha256', `${eventId}:${type}:${endpointId}`, 'hex').slice(0, 32)}`;
}

/** Between the lines of one endpoint's batch: JSON.stringify escapes it, like a line break. */
const BATCH_SEPARATOR = '\x1e';

/**
 * Records deliveries, on their own or inside the caller's transaction, as one row per endpoint
 * (a batch) that `expandBatches` turns into a row per delivery before anything reads them. A
 * row per delivery (a heap row and five index entries) cost collection a quarter of its pace
 * while every snapshot was subscribed; a batch is one row per endpoint and page, and the rows
 * are made when the dispatcher next claims, which waits for the collection sweep. Each column
 * goes as one text, a line per delivery and a separator per endpoint: JSON.stringify writes
 * neither (bodies are JSON) and ids are ours, so splitting is all the server does.
 */
export async function recordDeliveries(db: Pool | ClientBase, deliveries: readonly NewDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  const byEndpoint = new Map<string, NewDelivery[]>();
  for (const d of deliveries) {
    const batch = byEndpoint.get(d.endpointId);
    if (batch) batch.push(d);
    else byEndpoint.set(d.endpointId, [d]);
  }
  const batches = [...byEndpoint.values()];
  // A field holding a line break or a separator would add one to the column's count: counted
  // once in the column's text, not looked for value by value.
  const column = (value: (d: NewDelivery) => string, checked = true) => {
    const text = batches.map((batch) => batch.map(value).join('\n')).join(BATCH_SEPARATOR);
    if (checked && occurrences(text, '\n') + occurrences(text, BATCH_SEPARATOR) !== deliveries.length - 1) {
      throw new Error('a webhook delivery field holds a line break or a record separator');
    }
    return text;
  };
  // A page's deliveries share one time: printed once.
  let at: Date | null = null;
  let atText = '';
  const createdAt = (d: NewDelivery) => (d.createdAt === at ? atText : (atText = (at = d.createdAt).toISOString()));
  await db.query(
    `INSERT INTO webhooks.delivery_batches (endpoint_id, delivery_ids, org_ids, event_ids, event_types, video_ids, bodies, created_ats)
     SELECT * FROM unnest(string_to_array($1, E'\\x1e'), string_to_array($2, E'\\x1e'), string_to_array($3, E'\\x1e'), string_to_array($4, E'\\x1e'),
                          string_to_array($5, E'\\x1e'), string_to_array($6, E'\\x1e'), string_to_array($7, E'\\x1e'), string_to_array($8, E'\\x1e'))`,
    [
      batches.map((batch) => batch[0]!.endpointId).join(BATCH_SEPARATOR),
      column((d) => d.deliveryId),
      column((d) => d.orgId),
      column((d) => d.eventId),
      column((d) => d.eventType),
      column((d) => d.videoId ?? ''),
      // Bodies are JSON.stringify's (bodyOf): not worth a scan of every byte.
      column((d) => d.body, false),
      column(createdAt),
    ],
  );
}

function occurrences(text: string, char: string): number {
  let n = 0;
  for (let i = text.indexOf(char); i !== -1; i = text.indexOf(char, i + 1)) n++;
  return n;
}

/** Batches expanded per statement (each its own short transaction). */
const EXPAND_BATCHES = 100;

/**
 * Makes the rows of recorded batches (of one endpoint, or all), oldest batch first, so `seq`
 * keeps the recording order. Serialized across processes: two expanding at once could give a
 * later delivery of a video the lower seq. A delivery there already (a page recorded twice) is
 * left as it is.
 */
export async function expandBatches(pool: Pool, endpointId: string | null = null): Promise<void> {
  const anyBatch = `SELECT 1 FROM webhooks.delivery_batches WHERE $1::text IS NULL OR endpoint_id = $1 LIMIT 1`;
  // Most calls find nothing to expand: one statement, not a transaction under the lock.
  while ((await pool.query(anyBatch, [endpointId])).rows.length > 0) {
    const client = await pool.connect();
    let taken = 0;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('webhooks.expand'))`);
      const { rows } = await client.query<{ taken: number }>(
        `WITH taken AS (
           DELETE FROM webhooks.delivery_batches
           WHERE batch_id IN (SELECT batch_id FROM webhooks.delivery_batches WHERE $1::text IS NULL OR endpoint_id = $1 ORDER BY batch_id LIMIT $2)
           RETURNING *
         ), made AS (
           INSERT INTO webhooks.deliveries (delivery_id, endpoint_id, org_id, event_id, event_type, video_id, body, created_at, next_attempt_at)
           SELECT d.delivery_id, t.endpoint_id, d.org_id, d.event_id, d.event_type, nullif(d.video_id, ''), d.body, d.created_at::timestamptz, d.created_at::timestamptz
           FROM taken t CROSS JOIN LATERAL unnest(string_to_array(t.delivery_ids, E'\\n'), string_to_array(t.org_ids, E'\\n'), string_to_array(t.event_ids, E'\\n'),
                                                  string_to_array(t.event_types, E'\\n'), string_to_array(t.video_ids, E'\\n'), string_to_array(t.bodies, E'\\n'),
                                                  string_to_array(t.created_ats, E'\\n'))
             WITH ORDINALITY AS d(delivery_id, org_id, event_id, event_type, video_id, body, created_at, n)
           ORDER BY t.batch_id, d.n
           ON CONFLICT (delivery_id) DO NOTHING
         )
         SELECT count(*)::int AS taken FROM taken`,
        [endpointId, EXPAND_BATCHES],
      );
      await client.query('COMMIT');
      taken = rows[0]!.taken;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
    if (taken < EXPAND_BATCHES) return;
  }
}

export interface Claimed {
  delivery_id: string;
  endpoint_id: string;
  org_id: string;
  body: string;
  attempts: number;
  claim_token: string;
  /** The endpoint as the read model has it at the claim; null when it was deleted. */
  endpoint: ClaimedEndpoint | null;
}

export type ClaimedEndpoint = Pick<WebhookEndpointRow, 'endpoint_id' | 'org_id' | 'url' | 'enabled' | 'sealed_secret' | 'previous_sealed_secret' | 'previous_expires_at'>;

interface ClaimedRow extends Omit<Claimed, 'endpoint'> {
  url: string | null;
  enabled: boolean | null;
  sealed_secret: string | null;
  previous_sealed_secret: string | null;
  previous_expires_at: Date | null;
}

/** Per endpoint, at most this many deliveries are in flight (across every process). */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 10;
/** A claim outlives the 15 s timeout of a send; a sender that died lets it lapse and another retakes it. */
export const CLAIM_MS = 20_000;

/**
 * Claims up to `limit` due deliveries: per endpoint, only the oldest pending one of each video
 * (order), and no more than MAX_IN_FLIGHT_PER_ENDPOINT claimed at once. Serialized across
 * processes by an advisory lock: the window over pending rows cannot take row locks. Not a
 * LIMIT before the ranking: an endpoint with a deep backlog must not hide other endpoints' work.
 * An endpoint with nothing in flight gets its first place before any endpoint gets more.
 * Recorded batches then waiting become deliveries (expandBatches), and those are claimed too. A
 * delivery already expanded is older than any still in a batch (batches are expanded oldest
 * first), so claiming before the expansion keeps each video's order.
 *
 * `reserved` of the `limit` places go only to endpoints with nothing in flight (their first
 * place): the rest can all be taken by endpoints that have some, and one organization's many
 * endpoints must not leave another's none.
 *
 * `marks`, ends of earlier attempts, are written first in the same transaction: the places they
 * free are claimed again at once. Answers the claims and the outcome of each mark written.
 */
export async function claimDue(
  pool: Pool,
  now: Date,
  limit: number,
  marks: readonly AttemptMark[] = [],
  reserved = 0,
): Promise<{ claimed: Claimed[]; marked: Map<string, MarkOutcome> }> {
  const first = await claimOn(pool, now, limit, limit - reserved, marks);
  if (!first.batches) return first;
  await expandBatches(pool);
  const room = limit - first.claimed.length;
  return room > 0 ? { claimed: [...first.claimed, ...(await claimOn(pool, now, room, room - reserved, [])).claimed], marked: first.marked } : first;
}

/** One claim (after writing `marks`), and whether recorded batches were waiting to be expanded. */
async function claimOn(
  pool: Pool,
  now: Date,
  limit: number,
  limitMore: number,
  marks: readonly AttemptMark[],
): Promise<{ claimed: Claimed[]; marked: Map<string, MarkOutcome>; batches: boolean }> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`claim limit ${limit} is not a count`);
  if (!Number.isSafeInteger(limitMore)) throw new RangeError(`claim limit ${limitMore} is not a number`);
  const at = `'${now.toISOString()}'::timestamptz`;
  // Marks carry error texts from outside (a network error's message): a literal escaped by pg.
  const mark = marks.length > 0 ? `${markAttemptsSql(pg.escapeLiteral(markInput(marks)))};` : '';
  const client = await pool.connect();
  try {
    // The whole transaction in one round trip: one endpoint's sends wait for a claim after each
    // other, so its rate follows the claim's round trips (five when each statement went alone).
    // Hence literals (numbers and a time of our own) instead of parameters, which would make
    // each statement a round trip of its own. The lock comes before the marks, so two of these
    // transactions never hold rows the other waits for; a mark written apart (during a sweep,
    // or a lapsed claim's sender answering late) is what the claim's SKIP LOCKED is for.
    //
    // The claim (a function of the schema, `webhooks/010` in schema.ts): the endpoints with
    // pending work, one index probe each (a skip scan: a backlog of thousands costs nothing
    // more); per endpoint its claims in flight (a small index) and its oldest due deliveries, up
    // to its free places, the first pending of each video only.
    const results = (await client.query(
      `BEGIN;
       SELECT pg_advisory_xact_lock(hashtext('webhooks.claim'));
       ${mark}
       SELECT EXISTS (SELECT 1 FROM webhooks.delivery_batches) AS batches;
       SELECT * FROM webhooks.claim_due(${at}, ${limit}, ${limitMore}, ${MAX_IN_FLIGHT_PER_ENDPOINT}, ${CLAIM_MS});
       COMMIT`,
    )) as unknown as Array<{ rows: unknown[] }>;
    // BEGIN, the lock, the marks when there are any, then the look for batches and the claim.
    const [batchesLook, claim] = results.slice(-3, -1) as [{ rows: { batches: boolean }[] }, { rows: ClaimedRow[] }];
    const claimed = claim.rows.map(({ url, enabled, sealed_secret, previous_sealed_secret, previous_expires_at, ...claimed }) => ({
      ...claimed,
      endpoint:
        url === null || sealed_secret === null
          ? null
          : { endpoint_id: claimed.endpoint_id, org_id: claimed.org_id, url, enabled: enabled === true, sealed_secret, previous_sealed_secret, previous_expires_at },
    }));
    const marked = marks.length > 0 ? markOutcomes(results[2]!.rows as MarkedRow[]) : new Map<string, MarkOutcome>();
    return { claimed, marked, batches: batchesLook.rows[0]!.batches };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** Pending deliveries of an endpoint that can no longer receive them (deleted or disabled) end as failed. */
export async function failPendingOf(pool: Pool, endpointId: string, reason: string): Promise<void> {
  await expandBatches(pool, endpointId);
  await pool.query(
    `UPDATE webhooks.deliveries SET status = 'failed', last_error = $2, next_attempt_at = NULL, claimed_until = NULL, claim_token = NULL, replay_asked = false
     WHERE endpoint_id = $1 AND status = 'pending'`,
    [endpointId, reason],
  );
}

/**
 * Service time of the earliest pending delivery still to come due; null when none. (Those due
 * already and not claimed wait behind another send, which kicks the dispatcher when it ends.)
 */
export async function nextDue(pool: Pool, now: Date): Promise<Date | null> {
  const { rows } = await pool.query<{ at: Date | null }>(
    `SELECT min(next_attempt_at) AS at FROM webhooks.deliveries WHERE status = 'pending' AND next_attempt_at > $1`,
    [now],
  );
  return rows[0]?.at ?? null;
}

export interface DeliveryRow {
  delivery_id: string;
  seq: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_status: number | null;
  next_attempt_at: Date | null;
  created_at: Date;
  delivered_at: Date | null;
}

/** An endpoint's deliveries, newest first, after `beforeSeq` (a cursor) when given. */
export async function listDeliveries(pool: Pool, endpointId: string, beforeSeq: bigint | null, limit: number): Promise<DeliveryRow[]> {
  await expandBatches(pool, endpointId);
  const { rows } = await pool.query<DeliveryRow>(
    // d.seq, not seq: that name would be the text column of the answer, and sort 9 above 10.
    `SELECT delivery_id, seq::text, event_id, event_type, status, attempts, last_status, next_attempt_at, created_at, delivered_at
     FROM webhooks.deliveries d WHERE endpoint_id = $1 AND ($2::bigint IS NULL OR d.seq < $2::bigint) ORDER BY d.seq DESC LIMIT $3`,
    [endpointId, beforeSeq === null ? null : beforeSeq.toString(), limit],
  );
  return rows;
}

/**
 * Sends a delivery again (with its webhook-id), on a fresh schedule; false when the endpoint has
 * no such delivery. One under a claim (an attempt in flight) is marked replay_asked instead: the
 * attempt's mark then leaves it pending, due at once (schema.ts, `webhooks/009`). One statement,
 * so a mark committing meanwhile is seen (the row is read again as it now stands).
 */
export async function replayDelivery(pool: Pool, endpointId: string, deliveryId: string, now: Date): Promise<boolean> {
  await expandBatches(pool, endpointId);
  const { rowCount } = await pool.query(
    `UPDATE webhooks.deliveries SET
       status = CASE WHEN claim_token IS NULL THEN 'pending' ELSE status END,
       attempts = CASE WHEN claim_token IS NULL THEN 0 ELSE attempts END,
       next_attempt_at = CASE WHEN claim_token IS NULL THEN $3 ELSE next_attempt_at END,
       replay_asked = claim_token IS NOT NULL
     WHERE endpoint_id = $1 AND delivery_id = $2`,
    [endpointId, deliveryId, now],
  );
  return (rowCount ?? 0) > 0;
}

/** Every failed delivery of the endpoint made since `since`, sent again; answers how many. */
export async function recoverDeliveries(pool: Pool, endpointId: string, since: Date, now: Date): Promise<number> {
  const { rowCount } = await pool.query(
    `UPDATE webhooks.deliveries SET status = 'pending', attempts = 0, next_attempt_at = $3
     WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= $2`,
    [endpointId, since, now],
  );
  return rowCount ?? 0;
}

