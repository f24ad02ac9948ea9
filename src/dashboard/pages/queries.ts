// Reads the pages need beyond the API's (projections/queries.ts): the same read models, asked
// other questions (a search, counts per hour). Money comes from the log (ledger.ts).
import type { Pool } from 'pg';
import type { KeyMode, Platform, VideoStatus } from '../../domain/platform.ts';
import { READ_SCHEMA } from '../../../projections/index.ts';
import type { SnapshotRow, VideoRow } from '../../../projections/queries.ts';

const rm = READ_SCHEMA;

export interface ListedVideo extends VideoRow {
  latest: Pick<SnapshotRow, 'views' | 'likes' | 'comments' | 'shares'> | null;
}

export interface VideoSearch {
  orgId: string;
  mode: KeyMode;
  platform?: Platform;
  status?: VideoStatus;
  /** Part of the link or of the title, any case. */
  text?: string;
  limit: number;
}

/** Newest first, each with its latest snapshot's main metrics. */
export async function searchVideos(pool: Pool, search: VideoSearch): Promise<ListedVideo[]> {
  const pattern = search.text ? `%${search.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
  const { rows } = await pool.query<VideoRow & { latest: ListedVideo['latest'] }>(
    `SELECT v.video_id, v.job_id, v.org_id, v.mode, v.video_link, v.platform, v.status, v.duration_days,
            v.monitoring_started, v.ends_at, v.ended_at, v.is_deleted, v.current_metadata, v.created_at, vs.last_updated,
            (SELECT json_build_object('views', s.views::text, 'likes', s.likes::text, 'comments', s.comments::text, 'shares', s.shares::text)
               FROM ${rm}.snapshots s WHERE s.video_id = v.video_id ORDER BY s.slot DESC LIMIT 1) AS latest
       FROM ${rm}.videos v JOIN ${rm}.video_schedule vs ON vs.video_id = v.video_id
      WHERE v.org_id = $1 AND v.mode = $2
        AND ($3::text IS NULL OR v.platform = $3) AND ($4::text IS NULL OR v.status = $4)
        AND ($5::text IS NULL OR v.video_link ILIKE $5 OR v.current_metadata->>'title' ILIKE $5)
      ORDER BY v.created_at DESC, v.video_id
      LIMIT $6`,
    [search.orgId, search.mode, search.platform ?? null, search.status ?? null, pattern, search.limit],
  );
  return rows;
}

/** Live snapshots recorded per hour since `since` (hours without any are left out). */
export async function snapshotsPerHour(pool: Pool, orgId: string, since: Date): Promise<Array<{ hour: Date; snapshots: number }>> {
  const { rows } = await pool.query<{ hour: Date; snapshots: number }>(
    `SELECT date_trunc('hour', s.snapshot_time) AS hour, count(*)::int AS snapshots
       FROM ${rm}.videos v JOIN ${rm}.snapshots s ON s.video_id = v.video_id
      WHERE v.org_id = $1 AND v.mode = 'live' AND s.snapshot_time >= $2
      GROUP BY 1 ORDER BY 1`,
    [orgId, since],
  );
  return rows;
}
