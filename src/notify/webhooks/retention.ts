// How long webhooks.deliveries keeps a delivery: every row of a deleted endpoint goes (nothing
// can list, replay or recover it any more, and its bodies are its organization's data), and a
// delivered or failed one goes once it was made longer ago than the retention (service time).
// The dispatcher prunes once an hour of service time (dispatcher.ts), in statements of at most
// PRUNE_BATCH rows, each its own short transaction.
import type { Pool } from 'pg';
import { READ_SCHEMA as rm } from '../../../projections/index.ts';

/** Rows deleted per statement. */
export const PRUNE_BATCH = 5_000;

/**
 * Deletes up to `limit` rows: of endpoints no longer in the read model (deleted: it has them from
 * their creation, before the reactor records anything for them), and delivered or failed ones
 * made before `madeBefore`. Per endpoint (found one index probe each, as the claim finds them)
 * only its oldest `limit` rows are looked at, and only when its oldest is old enough or the
 * endpoint is gone: a delivery's `created_at` grows with its `seq` per endpoint, so what is due
 * is at the start, and an endpoint with nothing due costs one probe. A row another transaction
 * holds (a claim, a mark) is left to the next statement. Answers how many were deleted.
 */
export async function pruneDeliveriesOnce(pool: Pool, madeBefore: Date, limit = PRUNE_BATCH): Promise<number> {
  const { rowCount } = await pool.query(
    `WITH RECURSIVE endpoints AS (
       (SELECT d.endpoint_id FROM webhooks.deliveries d ORDER BY d.endpoint_id LIMIT 1)
       UNION ALL
       SELECT (SELECT d.endpoint_id FROM webhooks.deliveries d WHERE d.endpoint_id > e.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
       FROM endpoints e WHERE e.endpoint_id IS NOT NULL
     ), judged AS (
       SELECT e.endpoint_id, NOT EXISTS (SELECT 1 FROM ${rm}.webhook_endpoints w WHERE w.endpoint_id = e.endpoint_id) AS deleted
       FROM endpoints e WHERE e.endpoint_id IS NOT NULL
     ), due AS (
       SELECT o.delivery_id, j.deleted FROM judged j
       CROSS JOIN LATERAL (
         SELECT d.delivery_id, d.status, d.created_at FROM webhooks.deliveries d WHERE d.endpoint_id = j.endpoint_id ORDER BY d.seq LIMIT $2
       ) o
       WHERE (j.deleted OR (SELECT d.created_at FROM webhooks.deliveries d WHERE d.endpoint_id = j.endpoint_id ORDER BY d.seq LIMIT 1) < $1)
         AND (j.deleted OR (o.status <> 'pending' AND o.created_at < $1))
       LIMIT $2
     ), taken AS (
       -- A row locked here is checked again as it now stands: a replay or recover that committed
       -- since this statement began made it pending again, and it stays.
       SELECT d.delivery_id FROM webhooks.deliveries d JOIN due ON due.delivery_id = d.delivery_id
       WHERE due.deleted OR d.status <> 'pending'
       FOR UPDATE OF d SKIP LOCKED
     )
     DELETE FROM webhooks.deliveries d USING taken WHERE d.delivery_id = taken.delivery_id`,
    [madeBefore, limit],
  );
  return rowCount ?? 0;
}

/** Prunes until a statement deletes less than a batch, or `stopped()` says to stop. */
export async function pruneDeliveries(pool: Pool, madeBefore: Date, stopped: () => boolean): Promise<number> {
  let deleted = 0;
  for (;;) {
    const once = await pruneDeliveriesOnce(pool, madeBefore);
    deleted += once;
    if (once < PRUNE_BATCH || stopped()) return deleted;
  }
}
