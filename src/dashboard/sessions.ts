// Server-side sessions. The cookie holds a random id; the table holds only its SHA-256, so a
// leaked table opens no session. A new id at every sign-in (no fixation), ended at sign-out,
// when the member is removed, after 12 hours idle or 7 days in all. Times are wall time. A
// member's dead sessions are deleted at their next sign-in, so the table holds about the live
// ones: one row per sign-in otherwise, forever.
//
// A session also holds what one page shows once after a form redirects to it (Post/Redirect/
// Get: a new key's value, a webhook secret, an invitation link, a confirmation). It is sealed
// under a key derived from the session id, which only the browser's cookie has, so the row
// alone opens nothing; the first read by the page it is for takes it away.
import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import { SecretBox } from '../notify/webhooks/secret-box.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import type { SignedIn } from './pages/model.ts';

export const SESSION_COOKIE = 'vt_session';
export const IDLE_MS = 12 * 3_600_000;
export const ABSOLUTE_MS = 7 * 24 * 3_600_000;
/** last_seen_at is written at most this often per session (not on every page). */
const TOUCH_MS = 60_000;
/** A value held for the next page and not read by then is not shown later. */
export const SHOWN_ONCE_MS = 10 * 60_000;

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');
const boxOf = (id: string) => SecretBox.fromKey(Buffer.from(hkdfSync('sha256', id, '', 'vidtrack dashboard shown-once', 32)));

export class Sessions {
  constructor(
    private readonly pool: Pool,
    private readonly wall: Clock,
  ) {}

  /** A new session for the member; returns the id for the cookie. */
  async start(memberId: string): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    const now = this.wall.now();
    await this.pool.query(
      `WITH dead AS (
         DELETE FROM dashboard.sessions WHERE member_id = $2 AND (ended_at IS NOT NULL OR created_at <= $4 OR last_seen_at <= $5)
       )
       INSERT INTO dashboard.sessions (id_hash, member_id, created_at, last_seen_at) VALUES ($1, $2, $3, $3)`,
      [hashOf(id), memberId, now, new Date(now.getTime() - ABSOLUTE_MS), new Date(now.getTime() - IDLE_MS)],
    );
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

  /**
   * Keeps `text` for the session's next takeShownOnce by the page at `path` (in place of
   * anything held before, for whichever page). The path is kept in clear: it says which page,
   * never what.
   */
  async holdShownOnce(id: string, path: string, text: string): Promise<void> {
    await this.pool.query(`UPDATE dashboard.sessions SET shown_once = $2, shown_once_at = $3, shown_once_for = $4 WHERE id_hash = $1`, [
      hashOf(id),
      boxOf(id).seal(text),
      this.wall.now(),
      path,
    ]);
  }

  /**
   * What holdShownOnce kept for the page at `path`, once: the read clears it (of two reads at
   * once, one gets it). Null when nothing is held for that page (another page's stays held),
   * or it was held more than SHOWN_ONCE_MS ago.
   */
  async takeShownOnce(id: string | undefined, path: string): Promise<string | null> {
    if (!id || id.length > 100) return null;
    const { rows } = await this.pool.query<{ sealed: string; heldAt: Date }>(
      `UPDATE dashboard.sessions s SET shown_once = NULL, shown_once_at = NULL, shown_once_for = NULL
         FROM (SELECT id_hash, shown_once, shown_once_at FROM dashboard.sessions
                WHERE id_hash = $1 AND shown_once IS NOT NULL AND shown_once_for = $2 FOR UPDATE) held
        WHERE s.id_hash = held.id_hash
        RETURNING held.shown_once AS sealed, held.shown_once_at AS "heldAt"`,
      [hashOf(id), path],
    );
    const row = rows[0];
    if (!row || this.wall.now().getTime() - row.heldAt.getTime() > SHOWN_ONCE_MS) return null;
    return boxOf(id).open(row.sealed);
  }

  async end(id: string | undefined): Promise<void> {
    if (!id) return;
    await this.pool.query(`UPDATE dashboard.sessions SET ended_at = $2, shown_once = NULL WHERE id_hash = $1 AND ended_at IS NULL`, [hashOf(id), this.wall.now()]);
  }

  async endAllOf(memberId: string): Promise<void> {
    await this.pool.query(`UPDATE dashboard.sessions SET ended_at = $2, shown_once = NULL WHERE member_id = $1 AND ended_at IS NULL`, [memberId, this.wall.now()]);
  }
}
