// Read model: one row per tracked video, with what the API lists and what the scheduler claims.
import { ident, type LoggedEvent, type Projection } from './projection.ts';

interface NewVideo {
  video_id: string;
  job_id: string;
  org_id: string;
  key_id: string;
  mode: string;
  video_link: string;
  platform: string;
  platform_id: string;
  status: string;
  duration_days: number;
  monitoring_started: string;
  next_slot: number;
  snapshot_count: number;
  consecutive_failures: number;
  is_deleted: boolean;
  current_metadata: unknown;
  last_updated: string;
  ended_at: string | null;
  revision: string;
}

/** What a batch changes on a video that existed before it. */
interface VideoChange {
  video_id: string;
  snapshot_delta: number;
  next_slot: number;
  consecutive_failures: number | null;
  status: string | null;
  is_deleted: boolean | null;
  current_metadata: unknown;
  last_updated: string;
  ended_at: string | null;
  revision: string;
}

export const videosProjection: Projection = {
  name: 'videos',
  tables: ['videos'],
  ddl: (schema) => {
    const s = ident(schema);
    return `
    CREATE TABLE IF NOT EXISTS ${s}.videos (
      video_id text PRIMARY KEY,
      job_id text NOT NULL,
      org_id text NOT NULL,
      key_id text NOT NULL,
      mode text NOT NULL,
      video_link text NOT NULL,
      platform text NOT NULL,
      platform_id text NOT NULL,
      status text NOT NULL,
      duration_days int NOT NULL,
      total_slots int NOT NULL,
      monitoring_started timestamptz NOT NULL,
      ends_at timestamptz NOT NULL,
      next_slot int NOT NULL,
      next_slot_at timestamptz NOT NULL,
      snapshot_count int NOT NULL,
      consecutive_failures int NOT NULL,
      is_deleted boolean NOT NULL,
      current_metadata jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      last_updated timestamptz NOT NULL,
      ended_at timestamptz,
      revision bigint NOT NULL
    );
    CREATE INDEX IF NOT EXISTS videos_list ON ${s}.videos (org_id, mode, created_at DESC, video_id);
    CREATE INDEX IF NOT EXISTS videos_due ON ${s}.videos (next_slot_at) WHERE status = 'monitoring' AND next_slot < total_slots;
    CREATE INDEX IF NOT EXISTS videos_ending ON ${s}.videos (ends_at) WHERE status IN ('monitoring', 'paused');
    CREATE INDEX IF NOT EXISTS videos_paused ON ${s}.videos (org_id) WHERE status = 'paused';`;
  },

  async apply(client, schema, events) {
    const created = new Map<string, NewVideo>();
    const changed = new Map<string, VideoChange>();
    for (const event of events) fold(event, created, changed);
    const s = ident(schema);

    if (created.size > 0) {
      const rows = [...created.values()];
      await client.query(
        `INSERT INTO ${s}.videos (video_id, job_id, org_id, key_id, mode, video_link, platform, platform_id, status,
           duration_days, total_slots, monitoring_started, ends_at, next_slot, next_slot_at, snapshot_count,
           consecutive_failures, is_deleted, current_metadata, created_at, last_updated, ended_at, revision)
         SELECT r.video_id, r.job_id, r.org_id, r.key_id, r.mode, r.video_link, r.platform, r.platform_id, r.status,
           r.duration_days, r.duration_days * 24, r.monitoring_started, r.monitoring_started + r.duration_days * interval '1 day',
           r.next_slot, r.monitoring_started + r.next_slot * interval '1 hour', r.snapshot_count,
           r.consecutive_failures, r.is_deleted, r.current_metadata, r.monitoring_started, r.last_updated, r.ended_at, r.revision
         FROM jsonb_to_recordset($1::jsonb) AS r(video_id text, job_id text, org_id text, key_id text, mode text,
           video_link text, platform text, platform_id text, status text, duration_days int, monitoring_started timestamptz,
           next_slot int, snapshot_count int, consecutive_failures int, is_deleted boolean, current_metadata jsonb,
           last_updated timestamptz, ended_at timestamptz, revision bigint)
         ON CONFLICT (video_id) DO NOTHING`,
        [JSON.stringify(rows)],
      );
    }
    if (changed.size > 0) {
      await client.query(
        `UPDATE ${s}.videos v SET
           snapshot_count = v.snapshot_count + c.snapshot_delta,
           next_slot = greatest(v.next_slot, c.next_slot),
           next_slot_at = v.monitoring_started + greatest(v.next_slot, c.next_slot) * interval '1 hour',
           consecutive_failures = coalesce(c.consecutive_failures, v.consecutive_failures),
           status = coalesce(c.status, v.status),
           is_deleted = coalesce(c.is_deleted, v.is_deleted),
           current_metadata = coalesce(c.current_metadata, v.current_metadata),
           last_updated = greatest(v.last_updated, c.last_updated),
           ended_at = coalesce(c.ended_at, v.ended_at),
           revision = c.revision
         FROM jsonb_to_recordset($1::jsonb) AS c(video_id text, snapshot_delta int, next_slot int, consecutive_failures int,
           status text, is_deleted boolean, current_metadata jsonb, last_updated timestamptz, ended_at timestamptz, revision bigint)
         WHERE v.video_id = c.video_id AND v.revision < c.revision`,
        [JSON.stringify([...changed.values()])],
      );
    }
  },
};

function fold(event: LoggedEvent, created: Map<string, NewVideo>, changed: Map<string, VideoChange>): void {
  if (event.type === 'VideoTracked') {
    const d = event.data;
    created.set(d.videoId, {
      video_id: d.videoId,
      job_id: d.jobId,
      org_id: d.orgId,
      key_id: d.keyId,
      mode: d.mode,
      video_link: d.videoLink,
      platform: d.platform,
      platform_id: d.platformId,
      status: 'monitoring',
      duration_days: d.durationDays,
      monitoring_started: d.startedAt,
      next_slot: 0,
      snapshot_count: 0,
      consecutive_failures: 0,
      is_deleted: false,
      current_metadata: d.metadata,
      last_updated: d.startedAt,
      ended_at: null,
      revision: event.revision.toString(),
    });
    return;
  }
  if (!event.streamId.startsWith('video-')) return;
  const videoId = (event.data as { videoId: string }).videoId;
  // A video first seen in this batch is changed in place; an older one collects a delta.
  const row: NewVideo | VideoChange =
    created.get(videoId) ??
    changed.get(videoId) ??
    setAndReturn(changed, videoId, {
      video_id: videoId,
      snapshot_delta: 0,
      next_slot: 0,
      consecutive_failures: null,
      status: null,
      is_deleted: null,
      current_metadata: null,
      last_updated: event.recordedAt.toISOString(),
      ended_at: null,
      revision: '0',
    });
  row.revision = event.revision.toString();
  switch (event.type) {
    case 'SnapshotRecorded':
      if ('snapshot_delta' in row) row.snapshot_delta += 1;
      else row.snapshot_count += 1;
      row.next_slot = Math.max(row.next_slot, event.data.slot + 1);
      row.consecutive_failures = 0;
      row.current_metadata = event.data.metadata;
      row.last_updated = event.data.snapshotTime;
      return;
    case 'CollectionFailed':
      row.next_slot = Math.max(row.next_slot, event.data.slot + 1);
      row.consecutive_failures = event.data.consecutiveFailures;
      return;
    case 'VideoErrored':
      row.status = 'error';
      row.is_deleted = event.data.isDeleted;
      row.ended_at = event.data.at;
      row.last_updated = event.data.at;
      return;
    case 'VideoPaused':
      row.status = 'paused';
      row.last_updated = event.data.at;
      return;
    case 'VideoResumed':
      row.status = 'monitoring';
      row.next_slot = Math.max(row.next_slot, event.data.nextSlot);
      row.last_updated = event.data.at;
      return;
    case 'VideoCompleted':
    case 'VideoCancelled':
      row.status = event.type === 'VideoCompleted' ? 'completed' : 'cancelled';
      row.ended_at = event.data.at;
      row.last_updated = event.data.at;
      return;
  }
}

function setAndReturn<K, V>(map: Map<K, V>, key: K, value: V): V {
  map.set(key, value);
  return value;
}
