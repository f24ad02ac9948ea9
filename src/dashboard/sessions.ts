// Server-side sessions. The cookie holds a random id; the table holds only its SHA-256, so a
// leaked table opens no session. A new id at every sign-in (no fixation), ended at sign-out,
// when the member is removed, after 12 hours idle or 7 days in all. Times are wall time.
import { createHash, randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import type { SignedIn } from './pages/model.ts';

export const SESSION_COOKIE = 'vt_session';
export const IDLE_MS = 12 * 3_600_000;
export const ABSOLUTE_MS = 7 * 24 * 3_600_000;
/** last_seen_at is written at most this often per session (not on every page). */
const TOUCH_MS = 60_000;

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');

export class Sessions {
  constructor(
    private readonly pool: Pool,
    private readonly wall: Clock,
  ) {}

  /** A new session for the member; returns the id for the cookie. */
  async start(memberId: string): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    const now = this.wall.now();
    await this.pool.query(`INSERT INTO dashboard.sessions (id_hash, member_id, created_at, last_seen_at) VALUES ($1, $2, $3, $3)`, [hashOf(id), memberId, now]);
    return id;
  }

  /** The member of a live session, or null (unknown, ended, timed out, or the member removed). */
  async lookup(id: string | undefined): Promise<SignedIn | null> {
    if (!id || id.length > 100) return null;
    const now = this.wall.now();
    const { rows } = await this.pool.query<SignedIn & { lastSeenAt: Date }>(
      `SELECT m.member_id AS "memberId", m.org_id AS "orgId", m.email, m.role, s.last_seen_at AS "lastSeenAt"
         FROM dashboard.sessions s JOIN ${READ_SCHEMA}.members m ON m.member_id = s.member_id AND m.status = 'active'
        WHERE s.id_hash = $1 AND s.ended_at IS NULL AND s.created_at > $2 AND s.last_seen_at > $3`,
      [hashOf(id), new Date(now.getTime() - ABSOLUTE_MS), new Date(now.getTime() - IDLE_MS)],
    );
    const row = rows[0];
    if (!row) return null;
    if (now.getTime() - row.lastSeenAt.getTime() > TOUCH_MS) {
      await this.pool.query(`UPDATE dashboard.sessions SET last_seen_at = $2 WHERE id_hash = $1`, [hashOf(id), now]);
    }
    return { memberId: row.memberId, orgId: row.orgId, email: row.email, role: row.role };
  }

  async end(id: string | undefined): Promise<void> {
    if (!id) return;
    await this.pool.query(`UPDATE dashboard.sessions SET ended_at = $2 WHERE id_hash = $1 AND ended_at IS NULL`, [hashOf(id), this.wall.now()]);
  }

  async endAllOf(memberId: string): Promise<void> {
    await this.pool.query(`UPDATE dashboard.sessions SET ended_at = $2 WHERE member_id = $1 AND ended_at IS NULL`, [memberId, this.wall.now()]);
  }
}
