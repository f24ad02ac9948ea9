// What the dashboard reads: members and invitations (read model `dashboard`), password
// hashes (its own table), and keys with their details, counters and videos.
import type { Pool } from 'pg';
import { READ_SCHEMA } from '../../projections/index.ts';
import { hashInviteToken } from '../commands/member-commands.ts';
import { normalizeEmail } from '../domain/members.ts';
import type { KeyListing, MemberListing } from './pages/model.ts';

const rm = READ_SCHEMA;

export interface Credentials {
  memberId: string;
  orgId: string;
  passwordHash: string | null;
}

/**
 * The active members with this address, oldest membership first, and their password hashes: one
 * person may be a member of several organizations, with a password for each.
 */
export async function credentialsByEmail(pool: Pool, email: string): Promise<Credentials[]> {
  const { rows } = await pool.query<Credentials>(
    `SELECT m.member_id AS "memberId", m.org_id AS "orgId", c.password_hash AS "passwordHash"
       FROM ${rm}.members m LEFT JOIN dashboard.credentials c ON c.member_id = m.member_id
      WHERE m.email = $1 AND m.status = 'active' ORDER BY m.joined_at, m.member_id`,
    [normalizeEmail(email)],
  );
  return rows;
}

export async function savePassword(pool: Pool, memberId: string, passwordHash: string): Promise<void> {
  await pool.query(
    `INSERT INTO dashboard.credentials (member_id, password_hash) VALUES ($1, $2)
     ON CONFLICT (member_id) DO UPDATE SET password_hash = excluded.password_hash, updated_at = now()`,
    [memberId, passwordHash],
  );
}

/**
 * The password of an invitation being accepted, saved before the join (the invitation's one
 * use) while the member is still invited: false, and nothing saved, once they have joined or
 * been removed, so a late second acceptance of a used link cannot replace the password the
 * first one set. An unjoined member's hash opens nothing (sign-in reads active members only)
 * and the next acceptance overwrites it.
 */
export async function savePasswordOfInvited(pool: Pool, memberId: string, passwordHash: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `INSERT INTO dashboard.credentials (member_id, password_hash)
     SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM ${rm}.members WHERE member_id = $1 AND status = 'invited')
     ON CONFLICT (member_id) DO UPDATE SET password_hash = excluded.password_hash, updated_at = now()`,
    [memberId, passwordHash],
  );
  return rowCount === 1;
}

export interface Invitation {
  memberId: string;
  orgId: string;
  email: string;
  status: 'invited' | 'active' | 'removed';
  expiresAt: Date;
}

export async function invitationByToken(pool: Pool, token: string): Promise<Invitation | null> {
  if (token.length > 100) return null;
  const { rows } = await pool.query<Invitation>(
    `SELECT member_id AS "memberId", org_id AS "orgId", email, status, invite_expires_at AS "expiresAt"
       FROM ${rm}.members WHERE invite_hash = $1`,
    [hashInviteToken(token)],
  );
  return rows[0] ?? null;
}

/** null: no such organization. */
export async function organizationName(pool: Pool, orgId: string): Promise<string | null> {
  const { rows } = await pool.query<{ name: string }>(`SELECT name FROM ${rm}.organizations WHERE org_id = $1`, [orgId]);
  return rows[0]?.name ?? null;
}

export async function listMembers(pool: Pool, orgId: string): Promise<MemberListing[]> {
  const { rows } = await pool.query<MemberListing>(
    `SELECT m.member_id AS "memberId", m.email, m.role, m.status, m.invited_at AS "invitedAt",
            coalesce(inviter.email, m.invited_by) AS "invitedBy"
       FROM ${rm}.members m LEFT JOIN ${rm}.members inviter ON inviter.member_id = m.invited_by
      WHERE m.org_id = $1 AND m.status <> 'removed' ORDER BY m.invited_at, m.member_id`,
    [orgId],
  );
  return rows;
}

/** True when `keyId` is an unrevoked key of `orgId`. */
export async function isActiveKeyOf(pool: Pool, orgId: string, keyId: string): Promise<boolean> {
  const { rowCount } = await pool.query(`SELECT 1 FROM ${rm}.api_keys WHERE key_id = $1 AND org_id = $2 AND NOT revoked`, [keyId, orgId]);
  return rowCount === 1;
}

/** Unrevoked and revoked keys, newest first, with up to 20 of each key's videos. */
export async function listKeys(pool: Pool, orgId: string): Promise<KeyListing[]> {
  const { rows } = await pool.query<KeyListing>(
    `SELECT k.key_id AS "keyId", k.name, k.mode, coalesce(d.prefix, 'vt_' || k.mode || '_') AS prefix, k.created_at AS "createdAt",
            coalesce(issuer.email, d.issued_by, 'operator') AS "createdBy", u.last_used_at AS "lastUsedAt",
            coalesce(u.requests, 0)::float8 AS requests, k.revoked,
            coalesce((SELECT json_agg(json_build_object('videoId', v.video_id, 'title', coalesce(nullif(v.current_metadata->>'title', ''), v.video_link)) ORDER BY v.created_at DESC)
                        FROM (SELECT v.* FROM ${rm}.video_keys vk JOIN ${rm}.videos v ON v.video_id = vk.video_id
                               WHERE vk.key_id = k.key_id ORDER BY v.created_at DESC LIMIT 20) v), '[]'::json) AS videos
       FROM ${rm}.api_keys k
       LEFT JOIN ${rm}.key_details d ON d.key_id = k.key_id
       LEFT JOIN ${rm}.members issuer ON issuer.member_id = d.issued_by
       LEFT JOIN dashboard.key_usage u ON u.key_id = k.key_id
      WHERE k.org_id = $1 ORDER BY k.created_at DESC, k.key_id`,
    [orgId],
  );
  return rows;
}
