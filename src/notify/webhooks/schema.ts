// The webhook reactor's own tables, migrated like the e-mail outbox: its checkpoint in the log,
// the deliveries it recorded (one per event and endpoint) and each endpoint's health.
import type { Migration } from '../../db/migrate.ts';
import { READ_SCHEMA as rm } from '../../../projections/index.ts';

export const webhookMigrations: readonly Migration[] = [
  {
    id: 'webhooks/001-deliveries',
    sql: `CREATE SCHEMA IF NOT EXISTS webhooks;
      CREATE TABLE webhooks.checkpoint (id int PRIMARY KEY DEFAULT 1, commit_position numeric NOT NULL, prepare_position numeric NOT NULL);
      CREATE TABLE webhooks.deliveries (
        -- Also the webhook-id header: the same on every attempt of one event to one endpoint.
        delivery_id text PRIMARY KEY,
        -- Recording order: per endpoint, deliveries of one video are sent in this order.
        seq bigserial NOT NULL UNIQUE,
        endpoint_id text NOT NULL,
        org_id text NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        video_id text,
        -- The exact bytes sent: the signature covers them, every attempt sends the same.
        body text NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts int NOT NULL DEFAULT 0,
        last_status int,
        last_error text,
        -- Service time; NULL once delivered or failed.
        next_attempt_at timestamptz,
        -- Wall time: a sender's claim while it sends (longer than the 15 s timeout).
        claimed_until timestamptz,
        claim_token uuid,
        created_at timestamptz NOT NULL,
        delivered_at timestamptz
      );
      CREATE INDEX deliveries_due ON webhooks.deliveries (next_attempt_at) WHERE status = 'pending';
      CREATE INDEX deliveries_order ON webhooks.deliveries (endpoint_id, video_id, seq) WHERE status = 'pending';
      CREATE INDEX deliveries_newest ON webhooks.deliveries (endpoint_id, seq DESC);
      CREATE TABLE webhooks.endpoint_health (
        endpoint_id text PRIMARY KEY,
        -- Service time of the first failure since the last success; NULL while it succeeds.
        failing_since timestamptz,
        last_success_at timestamptz
      );`,
  },
  {
    // balance.low, once per crossing: each organization's threshold (null: the default) and
    // whether a fall below it is still to be told (a deposit arms it again).
    id: 'webhooks/002-balance-watch',
    sql: `CREATE TABLE webhooks.balance_watch (org_id text PRIMARY KEY, threshold bigint, armed boolean NOT NULL DEFAULT true);`,
  },
  {
    // The claim walks each endpoint's pending deliveries in order.
    id: 'webhooks/003-pending-by-endpoint',
    sql: `CREATE INDEX deliveries_pending ON webhooks.deliveries (endpoint_id, seq) WHERE status = 'pending';`,
  },
  {
    // The claim counts each endpoint's deliveries in flight (at most 10) without walking its
    // backlog; the unique index on seq was never used (a sequence makes it unique) and cost
    // every recorded delivery one more index entry.
    id: 'webhooks/004-claims-in-flight',
    sql: `CREATE INDEX deliveries_claimed ON webhooks.deliveries (endpoint_id) WHERE status = 'pending' AND claim_token IS NOT NULL;
      ALTER TABLE webhooks.deliveries DROP CONSTRAINT deliveries_seq_key;`,
  },
  {
    // What the reactor records: per endpoint and page, its deliveries' columns as text, a line
    // each, until the next claim makes them rows of deliveries (deliveries.ts, expandBatches).
    // The long columns are stored out of line uncompressed: compressing them tripled the cost
    // of recording (247 against 78-84 ms for the 20,000 deliveries of the benchmark's hour).
    id: 'webhooks/005-delivery-batches',
    sql: `CREATE TABLE webhooks.delivery_batches (
        batch_id bigserial PRIMARY KEY,
        endpoint_id text NOT NULL,
        delivery_ids text NOT NULL,
        org_ids text NOT NULL,
        event_ids text NOT NULL,
        event_types text NOT NULL,
        video_ids text,
        bodies text NOT NULL,
        created_ats text NOT NULL
      );
      CREATE INDEX delivery_batches_endpoint ON webhooks.delivery_batches (endpoint_id, batch_id);
      ALTER TABLE webhooks.delivery_batches ALTER COLUMN bodies SET STORAGE EXTERNAL, ALTER COLUMN delivery_ids SET STORAGE EXTERNAL, ALTER COLUMN event_ids SET STORAGE EXTERNAL;`,
  },
  {
    // The claim and the mark as functions: PL/pgSQL keeps their plans for the session, where a
    // statement sent as text is planned on every call (about half a millisecond of the 1.5 ms an
    // endpoint's sends wait for each claim). deliveries.ts and marks.ts say what they do.
    id: 'webhooks/006-claim-and-mark-functions',
    sql: `
      CREATE FUNCTION webhooks.mark_attempts(input json) RETURNS TABLE (delivery_id text, failing_since timestamptz)
      LANGUAGE plpgsql AS $fn$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH i AS (
          SELECT * FROM json_to_recordset(input)
            AS i(delivery_id text, claim_token uuid, status text, last_status int, last_error text, next_attempt_at timestamptz, at timestamptz)
        ), marked AS (
          UPDATE webhooks.deliveries d SET status = i.status, last_status = i.last_status, last_error = i.last_error,
            next_attempt_at = i.next_attempt_at, delivered_at = CASE WHEN i.status = 'delivered' THEN i.at ELSE d.delivered_at END,
            claimed_until = NULL, claim_token = NULL
          FROM i WHERE d.delivery_id = i.delivery_id AND d.claim_token = i.claim_token
          RETURNING d.delivery_id, d.endpoint_id, i.status, i.at
        ), successes AS (
          SELECT m.endpoint_id, max(m.at) FILTER (WHERE m.status = 'delivered') AS last_success FROM marked m GROUP BY m.endpoint_id
        ), per_endpoint AS (
          SELECT m.endpoint_id, s.last_success,
            min(m.at) FILTER (WHERE m.status <> 'delivered' AND (s.last_success IS NULL OR m.at > s.last_success)) AS first_failure
          FROM marked m JOIN successes s ON s.endpoint_id = m.endpoint_id GROUP BY m.endpoint_id, s.last_success
        ), health AS (
          INSERT INTO webhooks.endpoint_health AS h (endpoint_id, failing_since, last_success_at)
          SELECT p.endpoint_id, p.first_failure, p.last_success FROM per_endpoint p ORDER BY p.endpoint_id
          ON CONFLICT (endpoint_id) DO UPDATE SET
            failing_since = CASE WHEN excluded.last_success_at IS NOT NULL THEN excluded.failing_since ELSE coalesce(h.failing_since, excluded.failing_since) END,
            last_success_at = greatest(h.last_success_at, excluded.last_success_at)
          RETURNING h.endpoint_id, h.failing_since
        )
        SELECT m.delivery_id, h.failing_since FROM marked m JOIN health h ON h.endpoint_id = m.endpoint_id;
      END $fn$;

${claimDueFunction('CREATE', 'r.seq')}`,
  },
  {
    // An endpoint with nothing in flight gets its first place before the others get more; then
    // by seq, as before. Ordered by seq alone, an organization whose endpoints held an older
    // backlog took every place the process had free (200; 10 an endpoint), and another's
    // delivery waited behind all of it. Going round every endpoint for every place cost the
    // 100-endpoint benchmark a fifth of its rate (BENCHMARKS.md, "Webhooks").
    id: 'webhooks/007-claim-first-places-first',
    sql: claimDueFunction('CREATE OR REPLACE', 'r.slot > 1, r.seq'),
  },
  {
    // A delivery the service fails itself (its endpoint disabled or deleted) never reached the
    // receiver: it says nothing of the endpoint's health. It used to start the 5 days of
    // failures, or count as the failure that ended them. (A mark without receiver_called, from
    // a process of the version before, counts, as it did.)
    id: 'webhooks/008-marks-without-a-send-leave-health',
    sql: `
${markAttemptsFunction(`          UPDATE webhooks.deliveries d SET status = i.status, last_status = i.last_status, last_error = i.last_error,
            next_attempt_at = i.next_attempt_at, delivered_at = CASE WHEN i.status = 'delivered' THEN i.at ELSE d.delivered_at END,
            claimed_until = NULL, claim_token = NULL
`)}`,
  },
  {
    // A replay asked while an attempt of the delivery is in flight used to change nothing (the
    // row was under a claim) though it was answered 202, and the attempt's mark then failed it
    // or left it on the old schedule: it is recorded as replay_asked and honoured by the mark.
    // The endpoint's health still takes the attempt's own outcome.
    id: 'webhooks/009-replay-during-an-attempt',
    sql: `ALTER TABLE webhooks.deliveries ADD COLUMN replay_asked boolean NOT NULL DEFAULT false;
${markAttemptsFunction(`          -- A replay asked during the attempt: pending again, on a fresh schedule from the attempt's end.
          UPDATE webhooks.deliveries d SET status = CASE WHEN d.replay_asked THEN 'pending' ELSE i.status END,
            last_status = i.last_status, last_error = i.last_error,
            next_attempt_at = CASE WHEN d.replay_asked THEN i.at ELSE i.next_attempt_at END,
            attempts = CASE WHEN d.replay_asked THEN 0 ELSE d.attempts END, replay_asked = false,
            delivered_at = CASE WHEN i.status = 'delivered' THEN i.at ELSE d.delivered_at END,
            claimed_until = NULL, claim_token = NULL
`)}`,
  },
  {
    // Places kept for endpoints with nothing in flight: the dispatcher claims more for an endpoint
    // that has some in flight only within its room less a reserve (dispatcher.ts). One
    // organization's 20 endpoints, 10 in flight each, used to take all 200 places of a process,
    // and another organization's endpoint waited for their timeouts. A function of five
    // arguments beside the one of four, which a process of the version before still calls.
    id: 'webhooks/010-places-kept-for-first-places',
    sql: claimDueFunction('CREATE', 'r.slot > 1, r.seq', true),
  },
];

/**
 * `mark_attempts` (deliveries.ts says what it does) around the update of the marked rows, which
 * is what `webhooks/008` and `webhooks/009` change: the rest is the same text in both. Applied
 * migrations are checksummed (db/migrate.ts): this text must not change, as claimDueFunction's.
 */
function markAttemptsFunction(update: string): string {
  return `      CREATE OR REPLACE FUNCTION webhooks.mark_attempts(input json) RETURNS TABLE (delivery_id text, failing_since timestamptz)
      LANGUAGE plpgsql AS $fn$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH i AS (
          SELECT * FROM json_to_recordset(input)
            AS i(delivery_id text, claim_token uuid, status text, last_status int, last_error text, next_attempt_at timestamptz, at timestamptz, receiver_called boolean)
        ), marked AS (
${update}          FROM i WHERE d.delivery_id = i.delivery_id AND d.claim_token = i.claim_token
          RETURNING d.delivery_id, d.endpoint_id, i.status, i.at, coalesce(i.receiver_called, true) AS receiver_called
        ), sent AS (
          SELECT m.endpoint_id, m.status, m.at FROM marked m WHERE m.receiver_called
        ), successes AS (
          SELECT m.endpoint_id, max(m.at) FILTER (WHERE m.status = 'delivered') AS last_success FROM sent m GROUP BY m.endpoint_id
        ), per_endpoint AS (
          SELECT m.endpoint_id, s.last_success,
            min(m.at) FILTER (WHERE m.status <> 'delivered' AND (s.last_success IS NULL OR m.at > s.last_success)) AS first_failure
          FROM sent m JOIN successes s ON s.endpoint_id = m.endpoint_id GROUP BY m.endpoint_id, s.last_success
        ), health AS (
          INSERT INTO webhooks.endpoint_health AS h (endpoint_id, failing_since, last_success_at)
          SELECT p.endpoint_id, p.first_failure, p.last_success FROM per_endpoint p ORDER BY p.endpoint_id
          ON CONFLICT (endpoint_id) DO UPDATE SET
            failing_since = CASE WHEN excluded.last_success_at IS NOT NULL THEN excluded.failing_since ELSE coalesce(h.failing_since, excluded.failing_since) END,
            last_success_at = greatest(h.last_success_at, excluded.last_success_at)
          RETURNING h.endpoint_id, h.failing_since
        )
        -- A delivery of an endpoint no send of this batch reached has no health row here.
        SELECT m.delivery_id, h.failing_since FROM marked m LEFT JOIN health h ON h.endpoint_id = m.endpoint_id;
      END $fn$;`;
}

/**
 * Since `webhooks/010`: of the places handed out in order (first places first), one beyond the
 * first `lim_more` goes only to an endpoint with nothing in flight (its first place).
 */
function chosenWithin(chosenFirst: string): string {
  return `
          SELECT r.delivery_id, r.endpoint_id FROM (
            SELECT r.delivery_id, r.endpoint_id, r.slot, row_number() OVER (ORDER BY ${chosenFirst}) AS place
            FROM ranked r WHERE r.slot <= max_in_flight
          ) r
          WHERE r.place <= lim AND (r.slot = 1 OR r.place <= lim_more)`;
}

/** The claim (deliveries.ts says what it does), its places handed out in `chosenFirst` order (and see `chosenWithin`). */
function claimDueFunction(create: 'CREATE' | 'CREATE OR REPLACE', chosenFirst: string, limMore = false): string {
  return `      ${create} FUNCTION webhooks.claim_due(due_by timestamptz, lim int, ${limMore ? 'lim_more int, ' : ''}max_in_flight int, claim_ms int)
      RETURNS TABLE (delivery_id text, endpoint_id text, org_id text, body text, attempts int, claim_token text,
        url text, enabled boolean, sealed_secret text, previous_sealed_secret text, previous_expires_at timestamptz)
      LANGUAGE plpgsql AS $fn$
      #variable_conflict use_column
      BEGIN
        RETURN QUERY
        WITH RECURSIVE pending_endpoints AS (
          (SELECT d.endpoint_id FROM webhooks.deliveries d WHERE d.status = 'pending' ORDER BY d.endpoint_id LIMIT 1)
          UNION ALL
          SELECT (SELECT d.endpoint_id FROM webhooks.deliveries d WHERE d.status = 'pending' AND d.endpoint_id > p.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
          FROM pending_endpoints p WHERE p.endpoint_id IS NOT NULL
        ), ranked AS (
          SELECT c.delivery_id, e.endpoint_id, c.seq, row_number() OVER (PARTITION BY e.endpoint_id ORDER BY c.seq) + b.n AS slot
          FROM pending_endpoints e
          CROSS JOIN LATERAL (
            SELECT count(*)::int AS n FROM webhooks.deliveries x
            WHERE x.endpoint_id = e.endpoint_id AND x.status = 'pending' AND x.claim_token IS NOT NULL AND x.claimed_until >= now()
          ) b
          CROSS JOIN LATERAL (
            SELECT d.delivery_id, d.seq FROM webhooks.deliveries d
            WHERE d.endpoint_id = e.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= due_by
              AND (d.claimed_until IS NULL OR d.claimed_until < now())
              -- Its video's oldest pending delivery to this endpoint is itself. The row comparison
              -- can only be an index condition of deliveries_order, so this stays one probe per
              -- row whatever the statistics say (on a fresh table, with the plain equalities, the
              -- planner walked the endpoint's whole backlog per row instead).
              AND (d.video_id IS NULL OR d.seq = (SELECT o.seq FROM webhooks.deliveries o
                                                  WHERE o.status = 'pending' AND (o.endpoint_id, o.video_id, o.seq) >= (d.endpoint_id, d.video_id, 0)
                                                  ORDER BY o.endpoint_id, o.video_id, o.seq LIMIT 1))
            ORDER BY d.seq LIMIT greatest(0, max_in_flight - b.n)
          ) c
          WHERE e.endpoint_id IS NOT NULL
        ), chosen AS (${limMore ? chosenWithin(chosenFirst) : `
          SELECT r.delivery_id, r.endpoint_id FROM ranked r WHERE r.slot <= max_in_flight ORDER BY ${chosenFirst} LIMIT lim`}
        ), taken AS (
          -- A row another transaction holds is left to a later claim: it is being marked (a
          -- lapsed claim's sender answering late) or changed by the API. Waiting for it could
          -- deadlock, as this transaction may hold endpoint health rows from the marks before it.
          -- A row locked here is checked again as it now stands.
          SELECT d.delivery_id, c.endpoint_id FROM webhooks.deliveries d JOIN chosen c ON c.delivery_id = d.delivery_id
          WHERE d.status = 'pending' AND (d.claimed_until IS NULL OR d.claimed_until < now())
          FOR UPDATE OF d SKIP LOCKED
        )
        UPDATE webhooks.deliveries d
        SET claimed_until = now() + claim_ms * interval '1 millisecond', claim_token = gen_random_uuid(), attempts = d.attempts + 1
        FROM taken LEFT JOIN ${rm}.webhook_endpoints w ON w.endpoint_id = taken.endpoint_id
        WHERE d.delivery_id = taken.delivery_id
        RETURNING d.delivery_id, d.endpoint_id, d.org_id, d.body, d.attempts, d.claim_token::text,
          w.url, w.enabled, w.sealed_secret, w.previous_sealed_secret, w.previous_expires_at;
      END $fn$;`;
}
