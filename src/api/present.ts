// Read-model rows -> the spec's JSON fields. Money leaves integer micros only here.
import { DAY_MS } from '../clock.ts';
import { SNAPSHOT_PRICE, toUsd } from '../domain/money.ts';
import type { KeyMode, Metrics } from '../domain/platform.ts';
import type { SnapshotRow, UsageRow, VideoRow } from '../../projections/queries.ts';

/** Days left in the period: counts down while monitoring or paused, 0 once completed, frozen when a video ends otherwise. */
export function daysRemaining(video: VideoRow, now: Date): number {
  if (video.status === 'completed') return 0;
  const until = video.ended_at && video.status !== 'monitoring' && video.status !== 'paused' ? video.ended_at : now;
  const left = Math.max(0, video.ends_at.getTime() - until.getTime()) / DAY_MS;
  return Math.round(left * 10_000) / 10_000;
}

export function presentListedVideo(video: VideoRow, now: Date) {
  return {
    id: video.video_id,
    job_id: video.job_id,
    video_link: video.video_link,
    platform: video.platform,
    status: video.status,
    monitoring_started: video.monitoring_started.toISOString(),
    monitoring_duration_days: video.duration_days,
    days_remaining: daysRemaining(video, now),
    current_metadata: video.current_metadata,
    created_at: video.created_at.toISOString(),
  };
}

export function presentSnapshot(jobId: string, s: SnapshotRow) {
  return snapshotAsShown(jobId, s.snapshot_id, s.slot, s.snapshot_time.toISOString(), s, s.provider);
}

/**
 * The fields of a snapshot as GET shows them, from a read-model row or from the event itself
 * (webhook bodies: `time` as the event recorded it, which is the ISO text GET prints).
 */
export function snapshotAsShown(jobId: string, id: string, slot: number, time: string, metrics: MetricValues, provider: string) {
  return {
    id,
    snapshot_id: `${jobId}-${String(slot).padStart(3, '0')}`,
    snapshot_time: time,
    views: metrics.views ?? undefined,
    likes: metrics.likes ?? undefined,
    comments: metrics.comments ?? undefined,
    shares: metrics.shares ?? undefined,
    saves: metrics.saves ?? undefined,
    retweets: metrics.retweets ?? undefined,
    replies: metrics.replies ?? undefined,
    provider,
  };
}

type MetricValues = { readonly [name in keyof Metrics]?: string | null };

export function presentVideoDetail(video: VideoRow, snapshots: SnapshotRow[], now: Date) {
  return {
    ...presentListedVideo(video, now),
    is_deleted: video.is_deleted,
    snapshots: snapshots.map((s) => presentSnapshot(video.job_id, s)),
    last_updated: video.last_updated.toISOString(),
  };
}

/** Test keys see their own test-mode figures; they never charge, so nothing is uncharged or charged there. */
export function presentUsage(usage: UsageRow | null, mode: KeyMode) {
  const u = usage ?? { balance: 0, totalCharged: 0, uncharged: 0, liveSnapshots: 0, testSnapshots: 0, activeLive: 0, activeTest: 0 };
  const live = mode === 'live';
  return {
    balance_usd: toUsd(u.balance),
    total_snapshots: live ? u.liveSnapshots : u.testSnapshots,
    active_videos: live ? u.activeLive : u.activeTest,
    uncharged_usage_usd: live ? toUsd(u.uncharged) : 0,
    total_charged_usd: live ? toUsd(u.totalCharged) : 0,
    estimated_snapshots_remaining: Math.max(0, Math.floor(u.balance / SNAPSHOT_PRICE)),
    cost_per_snapshot: toUsd(SNAPSHOT_PRICE),
  };
}
