// Read model of the dashboard: the members of each organization (with the hash of their
// pending invitation), what the dashboard shows of each key beyond authentication (prefix,
// who made it), and which key tracked each video (a key's "associated resources").
import { ident, ofType, type Projection } from './projection.ts';

export const dashboardProjection: Projection = {
  name: 'dashboard',
  version: 1,
  tables: ['members', 'key_details', 'video_keys'],
  consumes: ['MemberInvited', 'MemberJoined', 'MemberRemoved', 'ApiKeyIssued', 'VideoTracked'],
  ddl: (schema) => {
    const s = ident(schema);
    return `
    CREATE TABLE IF NOT EXISTS ${s}.members (
      member_id text PRIMARY KEY,
      org_id text NOT NULL,
      email text NOT NULL,
      role text NOT NULL,
      status text NOT NULL,
      invite_hash text NOT NULL UNIQUE,
      invite_expires_at timestamptz NOT NULL,
      invited_by text NOT NULL,
      invited_at timestamptz NOT NULL,
      joined_at timestamptz,
      removed_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS members_org ON ${s}.members (org_id, invited_at);
    CREATE INDEX IF NOT EXISTS members_email ON ${s}.members (email) WHERE status = 'active';
    CREATE TABLE IF NOT EXISTS ${s}.key_details (
      key_id text PRIMARY KEY,
      prefix text,
      issued_by text
    );
    CREATE TABLE IF NOT EXISTS ${s}.video_keys (
      video_id text PRIMARY KEY,
      key_id text NOT NULL
    );
    CREATE INDEX IF NOT EXISTS video_keys_key ON ${s}.video_keys (key_id);`;
  },

  // A key per video, a million rows on a large log, in SQL; the few other events page by page.
  async replay(client, schema, log) {
    await client.query(
      `INSERT INTO ${ident(schema)}.video_keys (video_id, key_id)
       SELECT "videoId", "keyId" FROM ${log.videoEvents} WHERE type = 'VideoTracked'`,
    );
    const others = dashboardProjection.consumes.filter((type) => type !== 'VideoTracked');
    for await (const page of log.pages(others)) await dashboardProjection.apply(client, schema, page);
  },

  async apply(client, schema, events) {
    const s = ident(schema);
    const invited = ofType(events, 'MemberInvited').map((e) => e.data);
    if (invited.length > 0) {
      await client.query(
        `INSERT INTO ${s}.members (member_id, org_id, email, role, status, invite_hash, invite_expires_at, invited_by, invited_at)
         SELECT "memberId", "orgId", email, role, 'invited', "inviteHash", "expiresAt", by, at FROM jsonb_to_recordset($1::jsonb)
           AS m("memberId" text, "orgId" text, email text, role text, "inviteHash" text, "expiresAt" timestamptz, by text, at timestamptz)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(invited)],
      );
    }
    // Joined and removed in one statement each; a page never holds both for one member out of order
    // (a stream's events come in revision order, and removal follows joining).
    const joined = ofType(events, 'MemberJoined').map((e) => e.data);
    if (joined.length > 0) {
      await client.query(
        `UPDATE ${s}.members m SET status = 'active', joined_at = j.at
         FROM jsonb_to_recordset($1::jsonb) AS j("memberId" text, at timestamptz)
         WHERE m.member_id = j."memberId" AND m.status = 'invited'`,
        [JSON.stringify(joined)],
      );
    }
    const removed = ofType(events, 'MemberRemoved').map((e) => e.data);
    if (removed.length > 0) {
      await client.query(
        `UPDATE ${s}.members m SET status = 'removed', removed_at = r.at
         FROM jsonb_to_recordset($1::jsonb) AS r("memberId" text, at timestamptz)
         WHERE m.member_id = r."memberId"`,
        [JSON.stringify(removed)],
      );
    }
    const issued = ofType(events, 'ApiKeyIssued').map((e) => e.data);
    if (issued.length > 0) {
      await client.query(
        `INSERT INTO ${s}.key_details (key_id, prefix, issued_by)
         SELECT "keyId", prefix, "issuedBy" FROM jsonb_to_recordset($1::jsonb) AS k("keyId" text, prefix text, "issuedBy" text)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(issued)],
      );
    }
    const tracked = ofType(events, 'VideoTracked').map((e) => ({ videoId: e.data.videoId, keyId: e.data.keyId }));
    if (tracked.length > 0) {
      await client.query(
        `INSERT INTO ${s}.video_keys (video_id, key_id)
         SELECT "videoId", "keyId" FROM jsonb_to_recordset($1::jsonb) AS v("videoId" text, "keyId" text)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(tracked)],
      );
    }
  },
};
