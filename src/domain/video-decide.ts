// Video commands and the pure decide function over the video stream's state.
import { HOUR_MS } from '../clock.ts';
import { DomainError } from './errors.ts';
import { countsAsFailedHour } from './failed-hours.ts';
import { SNAPSHOT_PRICE, type Micros } from './money.ts';
import { trackingShortfall } from './tracking-funds.ts';
import type { KeyMode, Metrics, Platform, VideoMetadata } from './platform.ts';
import { cleanAnswerTexts, cleanText, hasUnstorableCharacters, metricsProblem } from './storable.ts';
import {
  FAILED_HOURS_BEFORE_ERROR,
  endsAt,
  metadataKey,
  totalSlots,
  type FailureReason,
  type VideoEvent,
  type VideoState,
} from './video.ts';

export const MIN_DURATION_DAYS = 1;
export const MAX_DURATION_DAYS = 30;

export interface CollectedSnapshot {
  snapshotId: string;
  provider: string;
  metrics: Metrics;
  metadata: VideoMetadata;
}

export type VideoCommand =
  | {
      type: 'Track';
      videoId: string;
      jobId: string;
      orgId: string;
      keyId: string;
      mode: KeyMode;
      videoLink: string;
      platform: Platform;
      platformId: string;
      durationDays: number;
      /** balance − uncharged usage of the organization, read by the handler. */
      availableFunds: Micros;
      /** The platform's answer at track time: it is slot 0. */
      firstSnapshot: CollectedSnapshot;
      now: Date;
    }
  | { type: 'RecordSnapshot'; slot: number; snapshot: CollectedSnapshot; now: Date }
  | { type: 'RecordCollectionFailure'; slot: number; reason: FailureReason; message: string; now: Date }
  | { type: 'Pause'; now: Date }
  | { type: 'Resume'; now: Date }
  | { type: 'Complete'; now: Date }
  | { type: 'Stop'; now: Date }
  | { type: 'Cancel'; now: Date };

/** Longest failure message kept (platforms' error texts are quoted into it). */
const MAX_MESSAGE_LENGTH = 2_000;

/**
 * The snapshot as the log may hold it: its text cleaned, its counts checked. Collectors already
 * do both at the edge (src/collect/checked-collector.ts); this keeps any other caller honest.
 */
function storableSnapshot(snapshot: CollectedSnapshot): CollectedSnapshot {
  const problem = metricsProblem(snapshot.metrics);
  if (problem) throw new DomainError('invalid_argument', `the platform's answer cannot be stored: ${problem}`);
  return cleanAnswerTexts(snapshot);
}

export function decideVideo(command: VideoCommand, state: VideoState): VideoEvent[] {
  if (command.type === 'Track') return track(command, state);
  if (!state.exists) throw new DomainError('not_found', 'Video not found');
  const at = command.now.toISOString();
  const { videoId, orgId, mode } = state;

  switch (command.type) {
    case 'RecordSnapshot': {
      // A slot is appended at most once, whoever tries: a repeat is a no-op.
      if (command.slot < state.nextSlot) return [];
      if (state.status !== 'monitoring') throw new DomainError('not_monitoring', 'Video is not being monitored');
      if (command.slot >= totalSlots(state.durationDays)) throw new DomainError('invalid_argument', `slot ${command.slot} is past the tracking period`);
      const s = storableSnapshot(command.snapshot);
      return [
        {
          type: 'SnapshotRecorded',
          data: {
            videoId,
            orgId,
            mode,
            slot: command.slot,
            snapshotId: s.snapshotId,
            snapshotTime: at,
            provider: s.provider,
            metrics: s.metrics,
            ...(metadataKey(s.metadata) === state.metadataKey ? {} : { metadata: s.metadata }),
            price: mode === 'live' ? SNAPSHOT_PRICE : 0,
          },
        },
      ];
    }
    case 'RecordCollectionFailure': {
      if (command.slot < state.nextSlot) return [];
      if (state.status !== 'monitoring') throw new DomainError('not_monitoring', 'Video is not being monitored');
      if (command.slot >= totalSlots(state.durationDays)) throw new DomainError('invalid_argument', `slot ${command.slot} is past the tracking period`);
      // A late slot's failure is recorded with the count unchanged (failed-hours.ts).
      const counted = countsAsFailedHour(state.startedAt, command.slot, command.reason, command.now.getTime());
      const consecutiveFailures = state.consecutiveFailures + (counted ? 1 : 0);
      const message = cleanText(command.message, MAX_MESSAGE_LENGTH);
      const events: VideoEvent[] = [
        {
          type: 'CollectionFailed',
          data: { videoId, orgId, slot: command.slot, at, reason: command.reason, message, consecutiveFailures },
        },
      ];
      if (consecutiveFailures >= FAILED_HOURS_BEFORE_ERROR) {
        events.push({ type: 'VideoErrored', data: { videoId, orgId, mode, at, isDeleted: command.reason === 'deleted', message } });
      }
      return events;
    }
    case 'Pause':
      if (state.status !== 'monitoring') return [];
      return [{ type: 'VideoPaused', data: { videoId, orgId, mode, at } }];
    case 'Resume':
      if (state.status !== 'paused') return [];
      if (command.now.getTime() >= endsAt(state.startedAt, state.durationDays)) return [];
      // The period kept running while paused: collection picks up at the slot now due, or the next one.
      const nextSlot = Math.max(state.nextSlot, Math.ceil((command.now.getTime() - state.startedAt) / HOUR_MS));
      return [{ type: 'VideoResumed', data: { videoId, orgId, mode, at, nextSlot } }];
    case 'Complete':
      // Natural completion: the period has elapsed. A paused video completes too (its period kept running).
      if (state.status !== 'monitoring' && state.status !== 'paused') return [];
      if (command.now.getTime() < endsAt(state.startedAt, state.durationDays)) {
        throw new DomainError('invalid_state', 'Tracking period has not ended');
      }
      return [{ type: 'VideoCompleted', data: { videoId, orgId, mode, at, previousStatus: state.status, reason: 'period_ended' } }];
    case 'Stop':
      if (state.status !== 'monitoring') throw new DomainError('not_monitoring', 'Video is not being monitored');
      return [{ type: 'VideoCompleted', data: { videoId, orgId, mode, at, previousStatus: state.status, reason: 'stopped' } }];
    case 'Cancel':
      if (state.status !== 'monitoring' && state.status !== 'paused') {
        throw new DomainError('invalid_state', `Video is ${state.status}; only monitoring or paused videos can be cancelled`);
      }
      return [{ type: 'VideoCancelled', data: { videoId, orgId, mode, at, previousStatus: state.status } }];
  }
}

function track(command: Extract<VideoCommand, { type: 'Track' }>, state: VideoState): VideoEvent[] {
  if (state.exists) throw new DomainError('already_exists', `Video ${command.videoId} already exists`);
  const { durationDays } = command;
  if (!Number.isInteger(durationDays) || durationDays < MIN_DURATION_DAYS || durationDays > MAX_DURATION_DAYS) {
    throw new DomainError('invalid_argument', 'duration_days must be an integer from 1 to 30');
  }
  if (trackingShortfall(command.mode, command.availableFunds, durationDays) > 0) {
    throw new DomainError('insufficient_balance', 'Insufficient balance');
  }
  if (hasUnstorableCharacters(command.videoLink)) throw new DomainError('invalid_argument', 'video_link contains NUL or an unpaired UTF-16 surrogate');
  const at = command.now.toISOString();
  const { videoId, orgId, mode } = command;
  const s = storableSnapshot(command.firstSnapshot);
  return [
    {
      type: 'VideoTracked',
      data: {
        videoId,
        jobId: command.jobId,
        orgId,
        keyId: command.keyId,
        mode,
        videoLink: command.videoLink,
        platform: command.platform,
        platformId: command.platformId,
        durationDays,
        startedAt: at,
        metadata: s.metadata,
      },
    },
    {
      type: 'SnapshotRecorded',
      data: {
        videoId,
        orgId,
        mode,
        slot: 0,
        snapshotId: s.snapshotId,
        snapshotTime: at,
        provider: s.provider,
        metrics: s.metrics,
        // The metadata is the VideoTracked event's: slot 0 does not repeat it.
        price: mode === 'live' ? SNAPSHOT_PRICE : 0,
      },
    },
  ];
}

