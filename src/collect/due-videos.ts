// The scheduler's reads of the videos read model, and the decider state rebuilt from a row.
// Deciding from a row is safe because the append carries the row's stream revision: if the
// stream moved on since the row was projected, the append is refused and the video is
// decided again from its stream.
import type { Pool } from 'pg';
import { SNAPSHOT_PRICE } from '../domain/money.ts';
import type { KeyMode, Platform, VideoStatus } from '../domain/platform.ts';
import type { VideoState } from '../domain/video.ts';
import type { Position } from '../eventstore/port.ts';

export interface VideoWork {
  video_id: string;
  org_id: string;
  mode: KeyMode;
  platform: Platform;
  platform_id: string;
  video_link: string;
  status: VideoStatus;
  monitoring_started_ms: number;
  duration_days: number;
  next_slot: number;
  snapshot_count: number;
  consecutive_failures: number;
  is_deleted: boolean;
  revision: string;
  /** Epoch milliseconds, like every time of the schedule (they come from the events' ISO times). */
  next_slot_at_ms: number;
  metadata_key: string;
}

// All of rm.video_schedule s, which holds what a decision needs: the due read joins nothing.
// Times travel as epoch milliseconds (float8): pg's parser of timestamps was 5% of the
// collection's Node time, and date_part costs PostgreSQL less than extract's numeric.
const ms = (column: string) => `round(date_part('epoch', ${column}) * 1000)`;
const COLUMNS = `s.video_id, s.org_id, s.mode, s.platform, s.platform_id, s.video_link, s.status,
  ${ms('s.monitoring_started')} AS monitoring_started_ms, s.total_slots / 24 AS duration_days, s.next_slot, s.snapshot_count,
  s.consecutive_failures, s.is_deleted, s.revision, s.metadata_key, ${ms('s.next_slot_at')} AS next_slot_at_ms`;

export function stateOf(row: VideoWork): VideoState {
  return {
    exists: true,
    videoId: row.video_id,
    orgId: row.org_id,
    mode: row.mode,
    platform: row.platform,
    platformId: row.platform_id,
    status: row.status,
    startedAt: row.monitoring_started_ms,
    durationDays: row.duration_days,
    nextSlot: row.next_slot,
    snapshots: row.snapshot_count,
    consecutiveFailures: row.consecutive_failures,
    isDeleted: row.is_deleted,
    metadataKey: row.metadata_key,
  };
}

/** Where a sweep through the due videos has got to: the last (next_slot_at, video_id) it took. */
export interface DueCursor {
  atMs: number;
  videoId: string;
}

/** Due videos of any organization after `cursor`, in (next_slot_at, video_id) order. */
export async function dueVideosAfter(pool: Pool, now: Date, cursor: DueCursor | null, limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `SELECT ${COLUMNS} FROM rm.video_schedule s
     WHERE s.status = 'monitoring' AND s.next_slot < s.total_slots AND s.next_slot_at <= $1
       AND ($2::float8 IS NULL OR (s.next_slot_at, s.video_id) > (to_timestamp($2::float8 / 1000), $3::text))
     ORDER BY s.next_slot_at, s.video_id LIMIT $4`,
    [now, cursor?.atMs ?? null, cursor?.videoId ?? '', limit],
  );
  return rows;
}

/**
 * Money each organization can still spend (balance minus recorded but uncharged usage),
 * read in one statement with the usage projection's checkpoint: the figures are exactly
 * those of the events up to that position.
 */
export async function fundsAtCheckpoint(pool: Pool, orgIds: readonly string[]): Promise<{ funds: Map<string, number>; position: Position | null }> {
  const { rows } = await pool.query<{ org_id: string | null; available: string | null; commit_position: string | null; prepare_position: string | null }>(
    `WITH c AS (SELECT commit_position, prepare_position FROM rm.checkpoints WHERE projection = 'usage'
                UNION ALL SELECT NULL, NULL LIMIT 1)
     SELECT c.commit_position, c.prepare_position, u.org_id, u.balance - (u.live_cost - u.total_charged) AS available
     FROM c LEFT JOIN rm.usage u ON u.org_id = ANY($1::text[])`,
    [orgIds],
  );
  const first = rows[0];
  const position = first?.commit_position ? { commit: BigInt(first.commit_position), prepare: BigInt(first.prepare_position!) } : null;
  return { funds: new Map(rows.filter((r) => r.org_id !== null).map((r) => [r.org_id!, Number(r.available)])), position };
}

/**
 * Videos whose period is over: paused ones (their missed hours are gone), and ones with every
 * slot handled. A slot missed while no scheduler ran is still collected, late, before the
 * video completes: a d-day video is billed for, and gets, 24·d snapshots. (A slot that keeps
 * failing is handled too: it becomes a failed hour once its hour is over.)
 */
export async function endedVideos(pool: Pool, now: Date, limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `SELECT ${COLUMNS} FROM rm.videos v JOIN rm.video_schedule s USING (video_id)
     WHERE v.status IN ('monitoring', 'paused') AND v.ends_at <= $1
       AND (v.status = 'paused' OR s.next_slot >= s.total_slots)
     ORDER BY v.ends_at LIMIT $2`,
    [now, limit],
  );
  return rows;
}

/**
 * Paused videos that can still run, of organizations whose available funds (as the usage read
 * model shows them) cover a snapshot: per organization, oldest first, no more than its funds
 * pay a snapshot each. Organizations that cannot pay are never read, so however many paused
 * videos they keep, they take no room in `limit` from one that can.
 *
 * Runs every resume round: the organizations with paused videos are found by walking the
 * partial index videos_paused from one org_id to the next (one probe an organization, not a
 * read of every paused video nor of every organization's usage), then each one's usage by key.
 */
export async function pausedVideos(pool: Pool, now: Date, limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `WITH RECURSIVE paused_orgs(org_id) AS (
       (SELECT org_id FROM rm.videos WHERE status = 'paused' ORDER BY org_id LIMIT 1)
       UNION ALL
       SELECT (SELECT v.org_id FROM rm.videos v WHERE v.status = 'paused' AND v.org_id > p.org_id ORDER BY v.org_id LIMIT 1)
       FROM paused_orgs p WHERE p.org_id IS NOT NULL),
     funded AS (
       SELECT u.org_id, (u.balance - (u.live_cost - u.total_charged)) / $2::bigint AS snapshots
       FROM paused_orgs p JOIN rm.usage u ON u.org_id = p.org_id
       WHERE u.balance - (u.live_cost - u.total_charged) >= $2::bigint)
     SELECT ${COLUMNS}
     FROM funded f
     CROSS JOIN LATERAL (
       SELECT v.video_id FROM rm.videos v
       WHERE v.org_id = f.org_id AND v.status = 'paused' AND v.ends_at > $1
       ORDER BY v.monitoring_started LIMIT f.snapshots) r
     JOIN rm.video_schedule s ON s.video_id = r.video_id
     ORDER BY s.org_id, s.monitoring_started LIMIT $3`,
    [now, SNAPSHOT_PRICE, limit],
  );
  return rows;
}

/** Organizations with live snapshots recorded but not charged, and how many they have recorded in all. */
export async function unchargedOrganizations(pool: Pool, limit: number): Promise<Array<{ orgId: string; liveSnapshots: number }>> {
  const { rows } = await pool.query<{ org_id: string; live_snapshots: string }>(
    `SELECT org_id, live_snapshots FROM rm.usage WHERE live_snapshots > snapshots_charged LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ orgId: r.org_id, liveSnapshots: Number(r.live_snapshots) }));
}
