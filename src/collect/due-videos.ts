// The scheduler's reads of the videos read model, and the decider state rebuilt from a row.
// Deciding from a row is safe because the append carries the row's stream revision: if the
// stream moved on since the row was projected, the append is refused and the video is
// decided again from its stream.
import type { Pool } from 'pg';
import type { KeyMode, Platform, VideoStatus } from '../domain/platform.ts';
import type { VideoState } from '../domain/video.ts';

export interface VideoWork {
  video_id: string;
  org_id: string;
  mode: KeyMode;
  platform: Platform;
  platform_id: string;
  video_link: string;
  status: VideoStatus;
  monitoring_started: Date;
  duration_days: number;
  next_slot: number;
  snapshot_count: number;
  consecutive_failures: number;
  is_deleted: boolean;
  revision: string;
}

const COLUMNS = `video_id, org_id, mode, platform, platform_id, video_link, status, monitoring_started, duration_days,
  next_slot, snapshot_count, consecutive_failures, is_deleted, revision`;

const DUE = `status = 'monitoring' AND next_slot < total_slots AND next_slot_at <= $1`;

export function stateOf(row: VideoWork): VideoState {
  return {
    exists: true,
    videoId: row.video_id,
    orgId: row.org_id,
    mode: row.mode,
    platform: row.platform,
    status: row.status,
    startedAt: row.monitoring_started.getTime(),
    durationDays: row.duration_days,
    nextSlot: row.next_slot,
    snapshots: row.snapshot_count,
    consecutiveFailures: row.consecutive_failures,
    isDeleted: row.is_deleted,
  };
}

/** Organizations that have a slot due, the most overdue first. */
export async function organizationsWithDueSlots(pool: Pool, now: Date, limit: number): Promise<string[]> {
  const { rows } = await pool.query<{ org_id: string }>(
    `SELECT org_id FROM rm.videos WHERE ${DUE} ORDER BY next_slot_at LIMIT $2`,
    [now, limit],
  );
  return [...new Set(rows.map((r) => r.org_id))];
}

export async function dueVideos(pool: Pool, now: Date, orgIds: readonly string[], limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `SELECT ${COLUMNS} FROM rm.videos WHERE ${DUE} AND org_id = ANY($2::text[]) ORDER BY next_slot_at LIMIT $3`,
    [now, orgIds, limit],
  );
  return rows;
}

/**
 * Videos whose period is over: paused ones, ones with every slot handled, and ones whose
 * last slot could not be collected within an hour after the end.
 */
export async function endedVideos(pool: Pool, now: Date, limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `SELECT ${COLUMNS} FROM rm.videos
     WHERE status IN ('monitoring', 'paused') AND ends_at <= $1
       AND (status = 'paused' OR next_slot >= total_slots OR ends_at + interval '1 hour' <= $1)
     ORDER BY ends_at LIMIT $2`,
    [now, limit],
  );
  return rows;
}

/** Paused videos that can still run, per organization, oldest first. */
export async function pausedVideos(pool: Pool, now: Date, limit: number): Promise<VideoWork[]> {
  const { rows } = await pool.query<VideoWork>(
    `SELECT ${COLUMNS} FROM rm.videos WHERE status = 'paused' AND ends_at > $1 ORDER BY org_id, monitoring_started LIMIT $2`,
    [now, limit],
  );
  return rows;
}

/** Money an organization can still spend: balance minus what is recorded but not yet charged. */
export async function availableFunds(pool: Pool, orgIds: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ org_id: string; available: string }>(
    `SELECT org_id, balance - (live_cost - total_charged) AS available FROM rm.usage WHERE org_id = ANY($1::text[])`,
    [orgIds],
  );
  return new Map(rows.map((r) => [r.org_id, Number(r.available)]));
}

/** Organizations with live snapshots recorded but not charged, and how many they have recorded in all. */
export async function unchargedOrganizations(pool: Pool, limit: number): Promise<Array<{ orgId: string; liveSnapshots: number }>> {
  const { rows } = await pool.query<{ org_id: string; live_snapshots: string }>(
    `SELECT org_id, live_snapshots FROM rm.usage WHERE live_snapshots > snapshots_charged LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ orgId: r.org_id, liveSnapshots: Number(r.live_snapshots) }));
}
