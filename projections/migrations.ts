// The live schema's bookkeeping (checkpoints, versions, parked events) is migrated like any
// other table, so every process can read it; the read models themselves are not (versions.ts).
// Literal SQL: a shipped migration's text never changes (versions.ts's bookkeepingDdl may).
import type { Migration } from '../src/db/migrate.ts';

export const projectionMigrations: readonly Migration[] = [
  {
    id: 'projections/001-bookkeeping',
    sql: `CREATE SCHEMA IF NOT EXISTS rm;
      CREATE TABLE IF NOT EXISTS rm.checkpoints (
        projection text PRIMARY KEY,
        commit_position numeric,
        prepare_position numeric,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE IF NOT EXISTS rm.projection_versions (projection text PRIMARY KEY, ddl_hash text NOT NULL);
      ALTER TABLE rm.projection_versions ADD COLUMN IF NOT EXISTS version int;
      CREATE TABLE IF NOT EXISTS rm.parked_events (
        event_id text NOT NULL,
        projection text NOT NULL,
        commit_position numeric NOT NULL,
        prepare_position numeric NOT NULL,
        stream_id text NOT NULL,
        revision bigint NOT NULL,
        type text NOT NULL,
        error text NOT NULL,
        parked_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (event_id, projection)
      );`,
  },
  {
    id: 'projections/002-checkpoint-retries',
    sql: `ALTER TABLE rm.checkpoints ADD COLUMN IF NOT EXISTS retries bigint NOT NULL DEFAULT 0;`,
  },
];
