// Which log events become which webhook events, and their bodies: `{"type", "timestamp",
// "data"}`, with videos and snapshots exactly as GET /videos/{id} shows them (src/api/present.ts).
import { SNAPSHOT_PRICE, toUsd } from '../../domain/money.ts';
import type { KeyMode, VideoStatus } from '../../domain/platform.ts';
import { cleanText } from '../../domain/storable.ts';
import type { SnapshotRecorded } from '../../domain/video.ts';
import type { WebhookEventType } from '../../domain/webhooks.ts';
import type { RecordedEvent } from '../../eventstore/port.ts';
import { presentListedVideo, presentSnapshot, snapshotAsShown } from '../../api/present.ts';
import type { SnapshotRow, SnapshotVideo, VideoRow } from '../../../projections/queries.ts';

/** Receivers are told to expect bodies below this (Standard Webhooks advises small payloads). */
export const MAX_BODY_BYTES = 20 * 1024;

/** A log event as a webhook event, before its body is made. */
export interface WebhookCause {
  type: WebhookEventType;
  orgId: string;
  mode: KeyMode;
  /** Deliveries of one video keep their order; null: no order to keep. */
  videoId: string | null;
  /** `webhook.test` goes to this one endpoint only. */
  endpointId: string | null;
  timestamp: string;
  event: RecordedEvent;
}

/** The status a video has right after the event (the read model may already be further on). */
const STATUS_AFTER: Partial<Record<WebhookEventType, VideoStatus>> = {
  'tracking.completed': 'completed',
  'video.stopped': 'completed',
  'tracking.paused': 'paused',
  'tracking.resumed': 'monitoring',
  'tracking.failed': 'error',
};

type CauseData = { orgId: string; mode: KeyMode; videoId: string; at: string; reason?: string; endpointId?: string };

/** A video's webhook event. Not a closure inside causeOf: that one runs for every event of the log. */
function videoCause(type: WebhookEventType, event: RecordedEvent, timestamp: string): WebhookCause {
  const d = event.data as CauseData;
  return { type, orgId: d.orgId, mode: d.mode, videoId: d.videoId, endpointId: null, timestamp, event };
}

export function causeOf(event: RecordedEvent): WebhookCause | null {
  const d = event.data as CauseData;
  switch (event.type) {
    case 'SnapshotRecorded':
      return videoCause('snapshot.created', event, (event.data as SnapshotRecorded['data']).snapshotTime);
    case 'VideoCompleted':
      return videoCause(d.reason === 'stopped' ? 'video.stopped' : 'tracking.completed', event, d.at);
    case 'VideoPaused':
      return videoCause('tracking.paused', event, d.at);
    case 'VideoResumed':
      return videoCause('tracking.resumed', event, d.at);
    case 'VideoErrored':
      return videoCause('tracking.failed', event, d.at);
    case 'WebhookTestRequested':
      return { type: 'webhook.test', orgId: d.orgId, mode: d.mode, videoId: null, endpointId: d.endpointId!, timestamp: d.at, event };
    default:
      return null;
  }
}

/** What the read models say of a video when its event is sent. */
export interface VideoFacts {
  video: VideoRow;
  /** Snapshots recorded so far and the latest one (tracking.completed's totals and final metrics). */
  snapshotCount: number;
  lastSnapshot: SnapshotRow | null;
}

/** The video as GET shows it, without snapshots, as it stood right after the event. */
function videoAsOf(cause: WebhookCause, facts: VideoFacts) {
  const at = new Date(cause.timestamp);
  const status = STATUS_AFTER[cause.type] ?? facts.video.status;
  const listed = presentListedVideo({ ...facts.video, status, ended_at: status === 'monitoring' || status === 'paused' ? null : (facts.video.ended_at ?? at) }, at);
  return { ...listed, is_deleted: facts.video.is_deleted, last_updated: facts.video.last_updated.toISOString() };
}

/** `snapshot.created`: the snapshot as GET shows it, from the event; of the video, only its platform and job id. */
export function snapshotCreatedData(cause: WebhookCause, video: SnapshotVideo): Record<string, unknown> {
  const data = cause.event.data as SnapshotRecorded['data'];
  return {
    video_id: data.videoId,
    platform: video.platform,
    snapshot: snapshotAsShown(video.job_id, data.snapshotId, data.slot, data.snapshotTime, data.metrics, data.provider),
  };
}

/** The data of a webhook event; `facts` is needed for every type but `webhook.test`. */
export function dataOf(cause: WebhookCause, facts: VideoFacts | null): Record<string, unknown> {
  if (cause.type === 'webhook.test') {
    return { endpoint_id: cause.endpointId, message: 'A test event from vidtrack: your endpoint received and can verify it.' };
  }
  if (!facts) throw new Error(`no read-model facts for ${cause.type} of video ${cause.videoId}`);
  if (cause.type === 'snapshot.created') return snapshotCreatedData(cause, facts.video);
  const video = videoAsOf(cause, facts);
  if (cause.type === 'tracking.completed' || cause.type === 'video.stopped') {
    const last = facts.lastSnapshot ? presentSnapshot(facts.video.job_id, facts.lastSnapshot) : null;
    const { id: _id, snapshot_id: _sid, snapshot_time: _time, provider: _provider, ...finalMetrics } = last ?? { id: '', snapshot_id: '', snapshot_time: '', provider: '' };
    return {
      video,
      totals: {
        snapshots: facts.snapshotCount,
        cost_usd: facts.video.mode === 'live' ? toUsd(facts.snapshotCount * SNAPSHOT_PRICE) : 0,
      },
      final_metrics: last ? Object.fromEntries(Object.entries(finalMetrics).filter(([, v]) => v !== undefined)) : null,
    };
  }
  return { video };
}

/** The body sent, kept under MAX_BODY_BYTES: platform text (title, description) is what can make it long. */
export function bodyOf(type: WebhookEventType, timestamp: string, data: Record<string, unknown>): string {
  let body = JSON.stringify({ type, timestamp, data });
  // A UTF-16 unit is at most 3 bytes of UTF-8: most bodies need no count of their bytes.
  if (body.length * 3 < MAX_BODY_BYTES || Buffer.byteLength(body) < MAX_BODY_BYTES) return body;
  body = JSON.stringify({ type, timestamp, data: shortened(data, 500) });
  if (Buffer.byteLength(body) < MAX_BODY_BYTES) return body;
  return JSON.stringify({ type, timestamp, data: shortened(data, 50) });
}

function shortened(value: unknown, max: number): unknown {
  // Cut as stored text is cut (cleanText): half an emoji, a lone surrogate, is refused by jsonb and strict JSON parsers.
  if (typeof value === 'string') return value.length > max ? `${cleanText(value, max)}…` : value;
  if (Array.isArray(value)) return value.map((v) => shortened(v, max));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shortened(v, max)]));
  return value;
}
