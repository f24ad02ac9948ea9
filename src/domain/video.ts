// Video stream (`video-<id>`): its events, its state and how an event changes the state.
import { hash } from 'node:crypto';
import type { Micros } from './money.ts';
import type { KeyMode, Metrics, Platform, VideoMetadata, VideoStatus } from './platform.ts';
import { DAY_MS, HOUR_MS } from '../clock.ts';

export type VideoTracked = {
  type: 'VideoTracked';
  data: {
    videoId: string;
    jobId: string;
    orgId: string;
    keyId: string;
    mode: KeyMode;
    videoLink: string;
    platform: Platform;
    platformId: string;
    durationDays: number;
    startedAt: string;
    metadata: VideoMetadata;
  };
};

export type SnapshotRecorded = {
  type: 'SnapshotRecorded';
  data: {
    videoId: string;
    orgId: string;
    mode: KeyMode;
    slot: number;
    snapshotId: string;
    snapshotTime: string;
    provider: string;
    metrics: Metrics;
    /** Present only when the platform's metadata differs from the video's current metadata. */
    metadata?: VideoMetadata;
    /** What this snapshot costs the organization: the snapshot price in live mode, 0 in test mode. */
    price: Micros;
  };
};

/**
 * `unstorable`: the platform answered, but the answer could not be written to the log.
 * `own_limit`: the platform was not asked in the slot's hour because of a limit on our side (our
 * quota spent, a rate-limit window or Retry-After running): the slot is missed, never counted.
 */
export type FailureReason = 'not_found' | 'deleted' | 'unreachable' | 'unstorable' | 'own_limit';

/**
 * `consecutiveFailures`: failed hours in a row so far, this one included when it counts. A slot
 * tried only after its hour (a scheduler catching up) leaves it as it was (failed-hours.ts).
 */
export type CollectionFailed = {
  type: 'CollectionFailed';
  data: { videoId: string; orgId: string; slot: number; at: string; reason: FailureReason; message: string; consecutiveFailures: number };
};

export type VideoErrored = {
  type: 'VideoErrored';
  data: { videoId: string; orgId: string; mode: KeyMode; at: string; isDeleted: boolean; message: string };
};

export type VideoPaused = { type: 'VideoPaused'; data: { videoId: string; orgId: string; mode: KeyMode; at: string } };
/** `nextSlot`: the first slot collected after resuming; the slots missed while paused are skipped for good. */
export type VideoResumed = { type: 'VideoResumed'; data: { videoId: string; orgId: string; mode: KeyMode; at: string; nextSlot: number } };

export type VideoCompleted = {
  type: 'VideoCompleted';
  data: { videoId: string; orgId: string; mode: KeyMode; at: string; previousStatus: VideoStatus; reason: 'period_ended' | 'stopped' };
};

export type VideoCancelled = {
  type: 'VideoCancelled';
  data: { videoId: string; orgId: string; mode: KeyMode; at: string; previousStatus: VideoStatus };
};

export type VideoEvent =
  | VideoTracked
  | SnapshotRecorded
  | CollectionFailed
  | VideoErrored
  | VideoPaused
  | VideoResumed
  | VideoCompleted
  | VideoCancelled;

/** Consecutive failed hours after which a video goes to `error` (DESIGN §8). */
export const FAILED_HOURS_BEFORE_ERROR = 3;

export type VideoState =
  | { exists: false }
  | {
      exists: true;
      videoId: string;
      orgId: string;
      mode: KeyMode;
      platform: Platform;
      platformId: string;
      status: VideoStatus;
      startedAt: number;
      durationDays: number;
      /** One past the highest slot already handled (collected or failed); slots below it are never appended again. */
      nextSlot: number;
      snapshots: number;
      consecutiveFailures: number;
      isDeleted: boolean;
      /** metadataKey of the current metadata: all a decision needs of it. */
      metadataKey: string;
    };

export const initialVideoState: VideoState = { exists: false };

/**
 * A fingerprint of a video's metadata. The decider compares the platform's metadata with the
 * video's to log it only when it changes; a fingerprint lets the scheduler's read model carry
 * 44 characters instead of the text (descriptions run to thousands of characters). It hashes
 * the metadata's JSON text, which is the text its event holds: a rebuild then hashes that text
 * as it lies in the log, without parsing it (metadataKeySql).
 */
export function metadataKey(metadata: VideoMetadata): string {
  return hash('sha256', JSON.stringify(metadata), 'base64');
}

export function streamIdOfVideo(videoId: string): string {
  return `video-${videoId}`;
}

export function totalSlots(durationDays: number): number {
  return durationDays * 24;
}

/** The slot whose hour contains `at` (slot k covers [start + k h, start + (k+1) h)). */
export function slotAt(startedAt: number, at: number): number {
  return Math.floor((at - startedAt) / HOUR_MS);
}

export function slotDueAt(startedAt: number, slot: number): number {
  return startedAt + slot * HOUR_MS;
}

export function endsAt(startedAt: number, durationDays: number): number {
  return startedAt + durationDays * DAY_MS;
}

export function evolveVideo(state: VideoState, event: VideoEvent): VideoState {
  if (event.type === 'VideoTracked') {
    const d = event.data;
    return {
      exists: true,
      videoId: d.videoId,
      orgId: d.orgId,
      mode: d.mode,
      platform: d.platform,
      platformId: d.platformId,
      status: 'monitoring',
      startedAt: Date.parse(d.startedAt),
      durationDays: d.durationDays,
      nextSlot: 0,
      snapshots: 0,
      consecutiveFailures: 0,
      isDeleted: false,
      metadataKey: metadataKey(d.metadata),
    };
  }
  if (!state.exists) return state;
  switch (event.type) {
    case 'SnapshotRecorded':
      return {
        ...state,
        nextSlot: Math.max(state.nextSlot, event.data.slot + 1),
        snapshots: state.snapshots + 1,
        consecutiveFailures: 0,
        metadataKey: event.data.metadata ? metadataKey(event.data.metadata) : state.metadataKey,
      };
    case 'CollectionFailed':
      return {
        ...state,
        nextSlot: Math.max(state.nextSlot, event.data.slot + 1),
        consecutiveFailures: event.data.consecutiveFailures,
      };
    case 'VideoErrored':
      return { ...state, status: 'error', isDeleted: event.data.isDeleted };
    case 'VideoPaused':
      return { ...state, status: 'paused' };
    case 'VideoResumed':
      return { ...state, status: 'monitoring', nextSlot: Math.max(state.nextSlot, event.data.nextSlot) };
    case 'VideoCompleted':
      return { ...state, status: 'completed' };
    case 'VideoCancelled':
      return { ...state, status: 'cancelled' };
  }
}
