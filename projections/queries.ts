// Reads of the read models, shared by the API, the command handlers and the scheduler.
import type { Pool } from 'pg';
import { ALERT_METRICS, type AlertMetric } from '../src/domain/alerts.ts';
import type { Micros } from '../src/domain/money.ts';
import type { KeyMode, Plan, Platform, VideoStatus } from '../src/domain/platform.ts';
import type { Position } from '../src/eventstore/port.ts';
import { READ_SCHEMA } from './index.ts';

const rm = READ_SCHEMA;

export interface UsageRow {
  balance: Micros;
  totalCharged: Micros;
  /** Cost of live snapshots recorded but not yet charged. */
  uncharged: Micros;
  liveSnapshots: number;
  testSnapshots: number;
  activeLive: number;
  activeTest: number;
}

export async function readUsage(pool: Pool, orgId: string): Promise<UsageRow | null> {
  const { rows } = await pool.query(
    `SELECT balance, total_charged, live_cost - total_charged AS uncharged, live_snapshots, test_snapshots, active_live, active_test
     FROM ${rm}.usage WHERE org_id = $1`,
    [orgId],
  );
  const r = rows[0];
  if (!r) return null;
  return {
    balance: Number(r.balance),
    totalCharged: Number(r.total_charged),
    uncharged: Number(r.uncharged),
    liveSnapshots: Number(r.live_snapshots),
    testSnapshots: Number(r.test_snapshots),
    activeLive: r.active_live,
    activeTest: r.active_test,
  };
}

export interface KeyRow {
  keyId: string;
  orgId: string;
  mode: KeyMode;
  revoked: boolean;
  plan: Plan;
  rateLimit: number | null;
}

export async function findKeyByHash(pool: Pool, keyHash: string): Promise<KeyRow | null> {
  const { rows } = await pool.query(
    `SELECT k.key_id, k.org_id, k.mode, k.revoked, o.plan, o.rate_limit
     FROM ${rm}.api_keys k JOIN ${rm}.organizations o USING (org_id) WHERE k.key_hash = $1`,
    [keyHash],
  );
  const r = rows[0];
  return r ? { keyId: r.key_id, orgId: r.org_id, mode: r.mode, revoked: r.revoked, plan: r.plan, rateLimit: r.rate_limit } : null;
}

export async function findOrganization(pool: Pool, orgId: string): Promise<{ name: string; email: string } | null> {
  const { rows } = await pool.query(`SELECT name, email FROM ${rm}.organizations WHERE org_id = $1`, [orgId]);
  return rows[0] ?? null;
}

export async function findOrganizations(pool: Pool, orgIds: readonly string[]): Promise<Map<string, { name: string; email: string }>> {
  const { rows } = await pool.query(`SELECT org_id, name, email FROM ${rm}.organizations WHERE org_id = ANY($1::text[])`, [orgIds]);
  return new Map(rows.map((r: { org_id: string; name: string; email: string }) => [r.org_id, { name: r.name, email: r.email }]));
}

export interface VideoRow {
  video_id: string;
  job_id: string;
  org_id: string;
  mode: KeyMode;
  video_link: string;
  platform: Platform;
  status: VideoStatus;
  duration_days: number;
  monitoring_started: Date;
  ends_at: Date;
  ended_at: Date | null;
  is_deleted: boolean;
  current_metadata: Record<string, unknown>;
  created_at: Date;
  last_updated: Date;
}

// A video's row and its schedule row, which holds what each snapshot changes (last_updated).
const VIDEO_COLUMNS = `v.video_id, v.job_id, v.org_id, v.mode, v.video_link, v.platform, v.status, v.duration_days, v.monitoring_started,
  v.ends_at, v.ended_at, v.is_deleted, v.current_metadata, v.created_at, s.last_updated`;
const VIDEOS = `${rm}.videos v JOIN ${rm}.video_schedule s USING (video_id)`;

export async function readVideo(pool: Pool, videoId: string): Promise<VideoRow | null> {
  const { rows } = await pool.query<VideoRow>(`SELECT ${VIDEO_COLUMNS} FROM ${VIDEOS} WHERE v.video_id = $1`, [videoId]);
  return rows[0] ?? null;
}

/**
 * One page of an organization's videos, newest first (ties by id), after `after` when given:
 * the seek of GET /videos's cursor (DESIGN §8). Served by the videos_list index
 * (org_id, mode, created_at DESC, video_id): `created_at <= t` bounds the index scan, and only
 * the videos that share the last one's created_at to the millisecond are passed over by the
 * filter on id. created_at never changes once a video exists (a stop changes its status), so
 * a walk sees every video that existed when it began once, whatever is tracked or stopped
 * meanwhile; one with a status filter may of course miss a video whose status left the filter.
 */
export async function listVideos(
  pool: Pool,
  filter: { orgId: string; mode: KeyMode; platform?: string; status?: string; limit: number; after?: { createdAt: Date; videoId: string } },
): Promise<VideoRow[]> {
  const { rows } = await pool.query<VideoRow>(
    `SELECT ${VIDEO_COLUMNS} FROM ${VIDEOS}
     WHERE v.org_id = $1 AND v.mode = $2 AND ($3::text IS NULL OR v.platform = $3) AND ($4::text IS NULL OR v.status = $4)
       AND ($6::timestamptz IS NULL OR (v.created_at <= $6 AND (v.created_at < $6 OR v.video_id > $7)))
     ORDER BY v.created_at DESC, v.video_id LIMIT $5`,
    [filter.orgId, filter.mode, filter.platform ?? null, filter.status ?? null, filter.limit, filter.after?.createdAt ?? null, filter.after?.videoId ?? null],
  );
  return rows;
}

export interface SnapshotRow {
  slot: number;
  snapshot_id: string;
  snapshot_time: Date;
  provider: string;
  views: string | null;
  likes: string | null;
  comments: string | null;
  shares: string | null;
  saves: string | null;
  retweets: string | null;
  replies: string | null;
}

const SNAPSHOT_COLUMNS = `slot, snapshot_id, snapshot_time, provider, views::text, likes::text, comments::text, shares::text, saves::text,
  retweets::text, replies::text`;

/** Snapshots in ascending time order (slot order is time order: one slot per hour). */
export async function readSnapshots(pool: Pool, videoId: string): Promise<SnapshotRow[]> {
  const { rows } = await pool.query<SnapshotRow>(`SELECT ${SNAPSHOT_COLUMNS} FROM ${rm}.snapshots WHERE video_id = $1 ORDER BY slot`, [videoId]);
  return rows;
}

/** A snapshot that metric alerts watch: its video, slot and time, and the metrics they watch on it. */
export interface WatchedSnapshot {
  videoId: string;
  slot: number;
  snapshotTime: string;
  metrics: ReadonlySet<AlertMetric>;
}

/**
 * Of each video, the snapshots an alert's answer on the watched ones depends on (src/domain/
 * alerts.ts), in ascending time order, in one statement: not the video's whole history. For a
 * watched snapshot S and metric m, that is, among the points of m (its non-null values): the one
 * before S (P) and the one before P, and the newest at least 24 h older than S, and than P. All
 * of them lie at or after X, the newest point of m before P at least 24 h older than both, so
 * the snapshots from X's slot to S's are read (all of them before S when there is no such X;
 * S alone when there is no P). Each lookup walks the primary key back by slot, as the domain
 * does: about a day of snapshots when they are hourly and hold the metric.
 */
export async function readSnapshotsForAlerts(pool: Pool, watched: readonly WatchedSnapshot[]): Promise<Map<string, SnapshotRow[]>> {
  const joins = ALERT_METRICS.map(
    (m) => `LEFT JOIN LATERAL (SELECT s.slot, s.snapshot_time FROM ${rm}.snapshots s
       WHERE w.${m} AND s.video_id = w.video_id AND s.slot < w.slot AND s.${m} IS NOT NULL ORDER BY s.slot DESC LIMIT 1) p_${m} ON true
     LEFT JOIN LATERAL (SELECT s.slot FROM ${rm}.snapshots s
       WHERE s.video_id = w.video_id AND s.slot < p_${m}.slot AND s.snapshot_time <= LEAST(p_${m}.snapshot_time, w.snapshot_time) - interval '24 hours'
         AND s.${m} IS NOT NULL ORDER BY s.slot DESC LIMIT 1) x_${m} ON true`,
  );
  const starts = ALERT_METRICS.map((m) => `CASE WHEN NOT w.${m} THEN NULL WHEN p_${m}.slot IS NULL THEN w.slot ELSE coalesce(x_${m}.slot, 0) END`);
  const { rows } = await pool.query<SnapshotRow & { video_id: string }>(
    `WITH w AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], ${ALERT_METRICS.map((_, i) => `$${i + 4}::bool[]`).join(', ')})
         AS w(video_id, slot, snapshot_time, ${ALERT_METRICS.join(', ')})
     ), ranges AS (
       SELECT w.video_id, min(LEAST(${starts.join(', ')})) AS from_slot, max(w.slot) AS to_slot FROM w ${joins.join('\n     ')}
       GROUP BY w.video_id
     )
     SELECT s.video_id, ${SNAPSHOT_COLUMNS} FROM ranges r
       JOIN ${rm}.snapshots s ON s.video_id = r.video_id AND s.slot BETWEEN r.from_slot AND r.to_slot
     ORDER BY s.video_id, s.slot`,
    [watched.map((w) => w.videoId), watched.map((w) => w.slot), watched.map((w) => w.snapshotTime), ...ALERT_METRICS.map((m) => watched.map((w) => w.metrics.has(m)))],
  );
  const snapshots = new Map<string, SnapshotRow[]>(watched.map((w) => [w.videoId, []]));
  for (const { video_id: videoId, ...row } of rows) snapshots.get(videoId)!.push(row);
  return snapshots;
}

export interface WebhookEndpointRow {
  endpoint_id: string;
  org_id: string;
  mode: KeyMode;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const WEBHOOK_COLUMNS = `endpoint_id, org_id, mode, url, events, description, enabled, disabled_reason, sealed_secret,
  previous_sealed_secret, previous_expires_at, created_at, updated_at`;

export async function readWebhookEndpoint(pool: Pool, endpointId: string): Promise<WebhookEndpointRow | null> {
  const { rows } = await pool.query<WebhookEndpointRow>(`SELECT ${WEBHOOK_COLUMNS} FROM ${rm}.webhook_endpoints WHERE endpoint_id = $1`, [endpointId]);
  return rows[0] ?? null;
}

/** An organization's endpoints of one mode, oldest first. */
export async function listWebhookEndpoints(pool: Pool, orgId: string, mode: KeyMode): Promise<WebhookEndpointRow[]> {
  const { rows } = await pool.query<WebhookEndpointRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM ${rm}.webhook_endpoints WHERE org_id = $1 AND mode = $2 ORDER BY created_at, endpoint_id`,
    [orgId, mode],
  );
  return rows;
}

/** An endpoint with the log position of its creation. */
export interface LoggedWebhookEndpointRow extends WebhookEndpointRow {
  created: Position;
}

/**
 * Enabled endpoints of these organizations (any mode): whom an event may go to. Which of them
 * existed at each event is for the caller to decide by their positions.
 */
export async function enabledWebhookEndpoints(pool: Pool, orgIds: readonly string[]): Promise<LoggedWebhookEndpointRow[]> {
  const { rows } = await pool.query<WebhookEndpointRow & { created_commit: string; created_prepare: string }>(
    `SELECT ${WEBHOOK_COLUMNS}, created_commit::text, created_prepare::text FROM ${rm}.webhook_endpoints WHERE org_id = ANY($1::text[]) AND enabled`,
    [orgIds],
  );
  return rows.map(({ created_commit, created_prepare, ...endpoint }) => ({ ...endpoint, created: { commit: BigInt(created_commit), prepare: BigInt(created_prepare) } }));
}

/** What a `snapshot.created` body needs of each video (both fixed once it is tracked), without the video's wide row. */
export interface SnapshotVideo {
  platform: string;
  job_id: string;
}

export async function readSnapshotVideos(pool: Pool, videoIds: readonly string[]): Promise<Map<string, SnapshotVideo>> {
  if (videoIds.length === 0) return new Map();
  const { rows } = await pool.query<SnapshotVideo & { video_id: string }>(
    `SELECT video_id, platform, job_id FROM ${rm}.videos WHERE video_id = ANY($1::text[])`,
    [videoIds],
  );
  return new Map(rows.map((r) => [r.video_id, r]));
}

/** The videos' rows by id; an id missing from the read model is missing from the map. */
export async function readVideos(pool: Pool, videoIds: readonly string[]): Promise<Map<string, VideoRow>> {
  const { rows } = await pool.query<VideoRow>(`SELECT ${VIDEO_COLUMNS} FROM ${VIDEOS} WHERE v.video_id = ANY($1::text[])`, [videoIds]);
  return new Map(rows.map((v) => [v.video_id, v]));
}

/** How many snapshots a video has and its latest one. */
export async function snapshotTotals(pool: Pool, videoId: string): Promise<{ count: number; last: SnapshotRow | null }> {
  const { rows } = await pool.query<SnapshotRow & { count: number }>(
    `SELECT slot, snapshot_id, snapshot_time, provider, views::text, likes::text, comments::text, shares::text, saves::text,
       retweets::text, replies::text, count(*) OVER ()::int AS count
     FROM ${rm}.snapshots WHERE video_id = $1 ORDER BY slot DESC LIMIT 1`,
    [videoId],
  );
  const row = rows[0];
  if (!row) return { count: 0, last: null };
  const { count, ...last } = row;
  return { count, last };
}

export interface MetricAlertRow {
  alert_id: string;
  org_id: string;
  mode: KeyMode;
  video_id: string;
  metric: string;
  condition: Record<string, string>;
  created_at: Date;
}

const ALERT_COLUMNS = `alert_id, org_id, mode, video_id, metric, condition, created_at`;

/** A deleted alert's row (a tombstone, kept for the webhook reactor) is not found. */
export async function readAlert(pool: Pool, alertId: string): Promise<MetricAlertRow | null> {
  const { rows } = await pool.query<MetricAlertRow>(`SELECT ${ALERT_COLUMNS} FROM ${rm}.metric_alerts WHERE alert_id = $1 AND deleted_commit IS NULL`, [alertId]);
  return rows[0] ?? null;
}

export async function listAlerts(pool: Pool, orgId: string, mode: KeyMode): Promise<MetricAlertRow[]> {
  const { rows } = await pool.query<MetricAlertRow>(
    `SELECT ${ALERT_COLUMNS} FROM ${rm}.metric_alerts WHERE org_id = $1 AND mode = $2 AND deleted_commit IS NULL ORDER BY created_at, alert_id`,
    [orgId, mode],
  );
  return rows;
}

/** An alert with the log positions of its creation and (null: none yet) its deletion. */
export interface LoggedAlertRow extends MetricAlertRow {
  created: Position;
  deleted: Position | null;
}

/**
 * Alerts of these organizations (any mode) that a page of snapshots may fire: those not deleted
 * before `from`, the page's first snapshot. Which of them existed at each snapshot is for the
 * caller to decide by their positions.
 */
export async function alertsOfOrganizations(pool: Pool, orgIds: readonly string[], from: Position): Promise<LoggedAlertRow[]> {
  const { rows } = await pool.query<MetricAlertRow & { created_commit: string; created_prepare: string; deleted_commit: string | null; deleted_prepare: string | null }>(
    `SELECT ${ALERT_COLUMNS}, created_commit::text, created_prepare::text, deleted_commit::text, deleted_prepare::text FROM ${rm}.metric_alerts
     WHERE org_id = ANY($1::text[]) AND (deleted_commit IS NULL OR (deleted_commit, deleted_prepare) > ($2::numeric, $3::numeric))`,
    [orgIds, `${from.commit}`, `${from.prepare}`],
  );
  return rows.map(({ created_commit, created_prepare, deleted_commit, deleted_prepare, ...alert }) => ({
    ...alert,
    created: { commit: BigInt(created_commit), prepare: BigInt(created_prepare) },
    deleted: deleted_commit === null ? null : { commit: BigInt(deleted_commit), prepare: BigInt(deleted_prepare!) },
  }));
}
