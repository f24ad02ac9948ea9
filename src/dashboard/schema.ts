// The dashboard's own tables: secrets that must not be events (password hashes, session ids
// as hashes, what a page shows once after a form, sealed for that one display) and the per-key request counters
// the API processes flush.
import type { Migration } from '../db/migrate.ts';

export const dashboardMigrations: readonly Migration[] = [
  {
    id: 'dashboard/001-credentials-sessions-key-usage',
    sql: `
      CREATE SCHEMA IF NOT EXISTS dashboard;
      CREATE TABLE IF NOT EXISTS dashboard.credentials (
        member_id text PRIMARY KEY,
        password_hash text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE IF NOT EXISTS dashboard.sessions (
        id_hash text PRIMARY KEY,
        member_id text NOT NULL,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        ended_at timestamptz
      );
      CREATE INDEX IF NOT EXISTS sessions_member ON dashboard.sessions (member_id) WHERE ended_at IS NULL;
      CREATE TABLE IF NOT EXISTS dashboard.key_usage (
        key_id text PRIMARY KEY,
        requests bigint NOT NULL,
        last_used_at timestamptz NOT NULL
      );`,
  },
  {
    // What a session holds for the page a form redirects to (sessions.ts, holdShownOnce).
    id: 'dashboard/002-sessions-shown-once',
    sql: `
      ALTER TABLE dashboard.sessions ADD COLUMN IF NOT EXISTS shown_once text, ADD COLUMN IF NOT EXISTS shown_once_at timestamptz;`,
  },
  {
    // Which page what a session holds is for: only that page takes it (sessions.ts).
    id: 'dashboard/003-sessions-shown-once-for',
    sql: `
      ALTER TABLE dashboard.sessions ADD COLUMN IF NOT EXISTS shown_once_for text;`,
  },
  {
    // A sign-in deletes the member's dead sessions (sessions.ts): found by member, ended or not.
    id: 'dashboard/004-sessions-by-member',
    sql: `
      CREATE INDEX IF NOT EXISTS sessions_of_member ON dashboard.sessions (member_id);
      DROP INDEX IF EXISTS dashboard.sessions_member;`,
  },
];
