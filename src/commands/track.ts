// POST /videos/track as a command: checks in the order a client can act on them
// (duplicate, balance, platform), then appends the claim and the video's first events.
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import type { CollectorSet } from '../collect/collectors.ts';
import type { ParsedLink } from '../domain/links.ts';
import { estimatedCost, type Micros } from '../domain/money.ts';
import type { KeyMode } from '../domain/platform.ts';
import { streamIdOfTrackingClaim, type TrackingClaimed } from '../domain/tracking-claim.ts';
import { streamIdOfVideo, type VideoTracked } from '../domain/video.ts';
import { WrongExpectedRevision, type EventStore, type Position, type RecordedEvent } from '../eventstore/port.ts';
import { readUsage, type UsageRow } from '../../projections/queries.ts';
import { videoDecider } from './deciders.ts';
import { loadState } from './handle.ts';
import { jobIdOf, newId, snapshotIdOf, uuidFromName } from './ids.ts';

export interface TrackRequest {
  orgId: string;
  keyId: string;
  mode: KeyMode;
  link: ParsedLink;
  durationDays: number;
  idempotencyKey?: string;
}

/** The tracked video as the log holds it, so the answer does not depend on a read model's lag. */
export type TrackedVideoData = VideoTracked['data'];

export type TrackOutcome =
  | { kind: 'tracked'; videoId: string; video: TrackedVideoData; position: Position }
  /**
   * The Idempotency-Key was seen before: answer with that video, create nothing. `position`
   * is its stream's last event, for read-your-writes.
   */
  | { kind: 'repeated'; videoId: string; video: TrackedVideoData; position: Position }
  | { kind: 'duplicate'; videoId: string }
  | { kind: 'insufficient_balance'; balance: Micros; estimatedCost: Micros }
  | { kind: 'not_found' }
  | { kind: 'unavailable'; message: string }
  | { kind: 'invalid_response'; message: string };

export interface TrackDeps {
  store: EventStore;
  pool: Pool;
  collectors: CollectorSet;
  clock: Clock;
  /** The organization's usage from the read models (default: read from `pool`; the API reads it once per projector page). */
  readUsage?: (orgId: string) => Promise<UsageRow | null>;
}

/** A claim whose video never appeared (a crash between the two appends) lapses after this (service time). */
const CLAIM_GRACE_MS = 10 * 60_000;

export async function trackVideo(deps: TrackDeps, request: TrackRequest): Promise<TrackOutcome> {
  const { store, clock } = deps;
  const { orgId, mode, link } = request;
  const videoId = request.idempotencyKey ? uuidFromName(`idempotency:${orgId}:${mode}:${request.idempotencyKey}`) : newId();
  if (request.idempotencyKey) {
    const earlier = repeatOf(videoId, await store.readStream(streamIdOfVideo(videoId)));
    if (earlier) return earlier;
  }

  let platformId = link.platformId;
  if (platformId === null) {
    const resolved = await deps.collectors.resolveTikTokShortLink(mode, link.videoLink, link.shortCode!);
    if (!('platformId' in resolved)) return failureOutcome(resolved.status, resolved.message);
    platformId = resolved.platformId;
  }

  const claimStream = streamIdOfTrackingClaim(orgId, mode, link.platform, platformId);
  const claim = await activeClaim(store, claimStream, clock);
  if (claim.holder) return claim.holder === videoId ? repeated(store, videoId) : { kind: 'duplicate', videoId: claim.holder };

  const cost = estimatedCost(request.durationDays);
  let availableFunds = 0;
  if (mode === 'live') {
    const usage = await (deps.readUsage ? deps.readUsage(orgId) : readUsage(deps.pool, orgId));
    availableFunds = usage ? usage.balance - usage.uncharged : 0;
    if (availableFunds < cost) return { kind: 'insufficient_balance', balance: availableFunds, estimatedCost: cost };
  }

  const collector = deps.collectors.forVideo(mode, link.platform);
  const [first] = await collector.collect([{ platform: link.platform, platformId, videoLink: link.videoLink, slot: 0 }]);
  if (!first || first.status !== 'ok') return failureOutcome(first?.status ?? 'invalid', first && 'message' in first ? first.message : 'no answer');

  const now = clock.now();
  const claimed: TrackingClaimed = { type: 'TrackingClaimed', data: { videoId, orgId, at: now.toISOString() } };
  try {
    await store.append(claimStream, [claimed], claim.revision);
  } catch (error) {
    if (!(error instanceof WrongExpectedRevision)) throw error;
    // Another track of the same link won the race: a repeat of this very request (same
    // Idempotency-Key, so the same video id) or a duplicate.
    const winner = await activeClaim(store, claimStream, clock);
    if (winner.holder === videoId) return repeated(store, videoId);
    return winner.holder ? { kind: 'duplicate', videoId: winner.holder } : trackVideo(deps, request);
  }

  const events = videoDecider.decide(
    {
      type: 'Track',
      videoId,
      jobId: jobIdOf(videoId),
      orgId,
      keyId: request.keyId,
      mode,
      videoLink: link.videoLink,
      platform: link.platform,
      platformId,
      durationDays: request.durationDays,
      availableFunds,
      firstSnapshot: { snapshotId: snapshotIdOf(videoId, 0), provider: first.provider, metrics: first.metrics, metadata: first.metadata },
      now,
    },
    videoDecider.initialState,
  );
  try {
    const result = await store.append(streamIdOfVideo(videoId), events, 'no_stream');
    const tracked = events.find((e): e is VideoTracked => e.type === 'VideoTracked')!;
    return { kind: 'tracked', videoId, video: tracked.data, position: result.position };
  } catch (error) {
    if (error instanceof WrongExpectedRevision && request.idempotencyKey) return repeated(store, videoId);
    throw error;
  }
}

const REPEAT_WAIT_MS = 2_000;

/**
 * A repeat of a request that holds the claim: the first request may still be between its
 * claim and its video's first events, so wait (bounded) for the video stream to appear.
 */
async function repeated(store: EventStore, videoId: string): Promise<TrackOutcome> {
  const deadline = performance.now() + REPEAT_WAIT_MS;
  for (;;) {
    const earlier = repeatOf(videoId, await store.readStream(streamIdOfVideo(videoId)));
    if (earlier) return earlier;
    // A server-side condition, not the client's: answered as a retryable server error.
    if (performance.now() >= deadline) throw new Error(`the first request for video ${videoId} (same Idempotency-Key) is still in progress`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function repeatOf(videoId: string, events: RecordedEvent[]): TrackOutcome | null {
  const tracked = events.find((e) => e.type === 'VideoTracked');
  if (!tracked) return null;
  return { kind: 'repeated', videoId, video: tracked.data as TrackedVideoData, position: events[events.length - 1]!.position };
}

function failureOutcome(status: 'not_found' | 'unavailable' | 'invalid', message: string): TrackOutcome {
  if (status === 'not_found') return { kind: 'not_found' };
  if (status === 'unavailable') return { kind: 'unavailable', message };
  return { kind: 'invalid_response', message };
}

/** The video that holds a link now, if any: one still monitoring or paused, or one being created. */
async function activeClaim(store: EventStore, claimStream: string, clock: Clock): Promise<{ holder: string | null; revision: bigint | 'no_stream' }> {
  const events = await store.readStream(claimStream);
  const last = events[events.length - 1];
  if (!last) return { holder: null, revision: 'no_stream' };
  const { videoId, at } = (last.data as TrackingClaimed['data']);
  const { state } = await loadState(store, streamIdOfVideo(videoId), videoDecider);
  const active = state.exists
    ? state.status === 'monitoring' || state.status === 'paused'
    : clock.now().getTime() - Date.parse(at) < CLAIM_GRACE_MS;
  return { holder: active ? videoId : null, revision: last.revision };
}
