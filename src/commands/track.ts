// POST /videos/track as a command: checks in the order a client can act on them (duplicate,
// balance, platform), then claims the link and appends the video's first events.
//
// Two streams are written, the link's claim stream and the new video's, so a failure between
// the two must not leave the link claimed by a video that does not exist: a video append that
// fails releases the claim (and a claim whose video never appears lapses by itself, see
// domain/tracking-claim.ts).
import { systemClock, type Clock } from '../clock.ts';
import type { CollectorSet } from '../collect/collectors.ts';
import type { ParsedLink } from '../domain/links.ts';
import { estimatedCost, type Micros } from '../domain/money.ts';
import type { KeyMode } from '../domain/platform.ts';
import { activeHolder, streamIdOfTrackingClaim, type HolderVideo, type TrackingClaimState } from '../domain/tracking-claim.ts';
import { trackingShortfall } from '../domain/tracking-funds.ts';
import { streamIdOfVideo, type VideoTracked } from '../domain/video.ts';
import type { EventData, EventStore, Position, RecordedEvent } from '../eventstore/port.ts';
import { WrongExpectedRevision } from '../eventstore/port.ts';
import { trackingClaimDecider, videoDecider } from './deciders.ts';
import { handleCommand, loadState, MAX_ATTEMPTS, pauseAfterConflict } from './handle.ts';
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
  collectors: CollectorSet;
  clock: Clock;
  /** Wall time, in which a claim whose video never appeared lapses (the system's clock unless given). */
  wall?: Clock;
  /**
   * The query side's word on an organization's available funds (balance minus uncharged
   * usage): the API reads it from the usage read model as of the request's arrival. The
   * decider holds the rule; this only supplies the figure.
   */
  availableFunds: (orgId: string) => Promise<Micros>;
}

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
  const claim = await loadClaim(store, claimStream);
  const wall = deps.wall ?? systemClock;
  const holder = activeHolder(claim.state, claim.holderVideo, { now: clock.now(), wallNow: wall.now() });
  if (holder) return holder === videoId ? repeated(store, videoId) : { kind: 'duplicate', videoId: holder };

  // Checked before the platform is asked: a client that cannot pay learns so at once.
  const availableFunds = mode === 'live' ? await deps.availableFunds(orgId) : 0;
  if (trackingShortfall(mode, availableFunds, request.durationDays) > 0) {
    return { kind: 'insufficient_balance', balance: availableFunds, estimatedCost: estimatedCost(request.durationDays) };
  }

  const collector = deps.collectors.forVideo(mode, link.platform);
  const [first] = await collector.collect([{ platform: link.platform, platformId, videoLink: link.videoLink, slot: 0 }]);
  if (!first || first.status !== 'ok') return failureOutcome(first?.status ?? 'invalid', first && 'message' in first ? first.message : 'no answer');

  const holderNow = await claimLink(store, claimStream, videoId, orgId, { clock, wall }, claim);
  // Another track of the same link won the race: a repeat of this very request (same
  // Idempotency-Key, so the same video id) or a duplicate.
  if (holderNow !== videoId) return { kind: 'duplicate', videoId: holderNow };

  let events: EventData[];
  try {
    events = videoDecider.decide(
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
        now: clock.now(),
      },
      videoDecider.initialState,
    );
    const result = await store.append(streamIdOfVideo(videoId), events, 'no_stream');
    const tracked = events.find((e): e is VideoTracked => e.type === 'VideoTracked')!;
    return { kind: 'tracked', videoId, video: tracked.data, position: result.position };
  } catch (error) {
    if (error instanceof WrongExpectedRevision && request.idempotencyKey) return repeated(store, videoId);
    // A failed append may still have committed (the connection dropped after the commit):
    // then the video exists, and this track succeeded.
    const written = await store.readStream(streamIdOfVideo(videoId)).then(
      (recorded) => recorded,
      () => null,
    );
    const tracked = written && repeatOf(videoId, written);
    if (tracked?.kind === 'repeated') return { ...tracked, kind: 'tracked' };
    // Not written: the link must not stay claimed by it. When that cannot be known, or the
    // release fails too, the claim is left: it lapses by itself (CLAIM_GRACE_MS), since its
    // video never appeared. The client's answer is the append's error either way.
    if (written) await handleCommand(store, claimStream, trackingClaimDecider, { type: 'Release', videoId, orgId, now: clock.now() }).catch(() => undefined);
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

/**
 * Claims the link for `videoId`; answers the video that holds it afterwards (`videoId` when
 * this call won). The first attempt decides on the claim read before the platform was asked:
 * if the claim moved since, the append's expected revision fails and the claim is read again.
 * Not handleCommand's retry: after a conflict the holder may be another video, whose own
 * stream must be read again before deciding.
 */
async function claimLink(store: EventStore, claimStream: string, videoId: string, orgId: string, clocks: { clock: Clock; wall: Clock }, read: Claim): Promise<string> {
  let claim = read;
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) claim = await loadClaim(store, claimStream);
    const now = { now: clocks.clock.now(), wallNow: clocks.wall.now() };
    const holder = activeHolder(claim.state, claim.holderVideo, now);
    if (holder) return holder;
    const command = { type: 'Claim' as const, videoId, orgId, holderVideo: claim.holderVideo, ...now };
    const events = trackingClaimDecider.decide(command, claim.state);
    try {
      await store.append(claimStream, events, claim.revision);
      return videoId;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
      await pauseAfterConflict(attempt);
    }
  }
}

interface Claim {
  state: TrackingClaimState;
  revision: bigint | 'no_stream';
  holderVideo: HolderVideo;
}

/** The link's claim, and what its holder's stream says of the holder. */
async function loadClaim(store: EventStore, claimStream: string): Promise<Claim> {
  const { state, revision } = await loadState(store, claimStream, trackingClaimDecider);
  if (!state.holder) return { state, revision, holderVideo: { exists: false } };
  const video = (await loadState(store, streamIdOfVideo(state.holder), videoDecider)).state;
  if (!video.exists) return { state, revision, holderVideo: { exists: false } };
  // One Idempotency-Key sent at once with two links makes one video id for both tracks: each
  // claims its own link, and the video is written for one of them. It holds the other not at all.
  const ofThisLink = streamIdOfTrackingClaim(video.orgId, video.mode, video.platform, video.platformId) === claimStream;
  return { state, revision, holderVideo: ofThisLink ? { exists: true, status: video.status } : { exists: true } };
}
