// Read model: organizations and their keys (SHA-256 hashes only), for authentication.
import { ident, ofType, type Projection } from './projection.ts';

export const apiKeysProjection: Projection = {
  name: 'api_keys',
  version: 1,
  tables: ['organizations', 'api_keys'],
  consumes: ['OrganizationOpened', 'ApiKeyIssued', 'ApiKeyRevoked'],
  ddl: (schema) => {
    const s = ident(schema);
    return `
    CREATE TABLE IF NOT EXISTS ${s}.organizations (
      org_id text PRIMARY KEY,
      name text NOT NULL,
      email text NOT NULL,
      plan text NOT NULL,
      rate_limit int,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.api_keys (
      key_id text PRIMARY KEY,
      org_id text NOT NULL,
      key_hash text NOT NULL UNIQUE,
      name text NOT NULL,
      mode text NOT NULL,
      revoked boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      revoked_at timestamptz
    );`;
  },

  async apply(client, schema, events) {
    const s = ident(schema);
    const opened = ofType(events, 'OrganizationOpened').map((e) => e.data);
    if (opened.length > 0) {
      await client.query(
        `INSERT INTO ${s}.organizations (org_id, name, email, plan, rate_limit, created_at)
         SELECT "orgId", name, email, plan, "rateLimit", at FROM jsonb_to_recordset($1::jsonb)
           AS o("orgId" text, name text, email text, plan text, "rateLimit" int, at timestamptz)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(opened)],
      );
    }
    const issued = ofType(events, 'ApiKeyIssued').map((e) => e.data);
    if (issued.length > 0) {
      await client.query(
        `INSERT INTO ${s}.api_keys (key_id, org_id, key_hash, name, mode, created_at)
         SELECT "keyId", "orgId", "keyHash", name, mode, at FROM jsonb_to_recordset($1::jsonb)
           AS k("keyId" text, "orgId" text, "keyHash" text, name text, mode text, at timestamptz)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(issued)],
      );
    }
    const revoked = ofType(events, 'ApiKeyRevoked').map((e) => e.data);
    if (revoked.length > 0) {
      await client.query(
        `UPDATE ${s}.api_keys k SET revoked = true, revoked_at = r.at
         FROM jsonb_to_recordset($1::jsonb) AS r("keyId" text, at timestamptz)
         WHERE k.key_id = r."keyId"`,
        [JSON.stringify(revoked)],
      );
    }
  },
};
