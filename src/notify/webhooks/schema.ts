// The webhook reactor's own tables, migrated like the e-mail outbox: its checkpoint in the log,
// the deliveries it recorded (one per event and endpoint) and each endpoint's health.
import type { Migration } from '../../db/migrate.ts';

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
];
