// Tracking-claim stream (`tracking-<org>-<mode>-<platform>-<platformId>`): who tracks a link now.
// It makes "same link tracked twice -> 409" race-free: two concurrent tracks of one link
// append to this stream at the same expected revision and only one wins.
//
// A claim names the video that holds the link. That video's own stream says whether it still
// does (monitoring or paused); a claim whose video never appeared (its track failed, or the
// process died between the two appends) lapses after a grace period of wall time, and a track
// whose video could not be written releases its claim at once.
import { DomainError } from './errors.ts';
import type { KeyMode, Platform, VideoStatus } from './platform.ts';

/** `wallAt`: the claim's wall time, in which it lapses (absent from claims written before it was recorded). */
export type TrackingClaimed = { type: 'TrackingClaimed'; data: { videoId: string; orgId: string; at: string; wallAt?: string } };
export type TrackingReleased = { type: 'TrackingReleased'; data: { videoId: string; orgId: string; at: string } };
export type TrackingClaimEvent = TrackingClaimed | TrackingReleased;

export interface TrackingClaimState {
  /** The video named by the last claim, until it is released. */
  holder: string | null;
  /** When the claim was made (ms), in wall time, or in service time for a claim that did not record its wall time. */
  claimedAt: number | null;
  claimedInWallTime: boolean;
}

/** Now, in both times: a claim lapses in the time it was recorded in. */
export interface ClaimClocks {
  now: Date;
  wallNow: Date;
}

/**
 * What the holder's own stream says of it (`exists` false: its events are not written, or never
 * will be). `status` is its status when it is a video of this link, and absent when it is not:
 * then it does not hold the link.
 */
export interface HolderVideo {
  exists: boolean;
  status?: VideoStatus;
}

export type TrackingClaimCommand =
  | { type: 'Claim'; videoId: string; orgId: string; holderVideo: HolderVideo; now: Date; wallNow: Date }
  | { type: 'Release'; videoId: string; orgId: string; now: Date };

/**
 * A claim whose video never appeared lapses after this, in wall time: a track appends its claim,
 * then its video, and at a high TIME_SCALE ten service minutes can pass between the two (6 ms at
 * 100000), so a second track would take the claim of a video still being written.
 */
export const CLAIM_GRACE_MS = 10 * 60_000;

export const initialTrackingClaimState: TrackingClaimState = { holder: null, claimedAt: null, claimedInWallTime: false };

export function streamIdOfTrackingClaim(orgId: string, mode: KeyMode, platform: Platform, platformId: string): string {
  return `tracking-${orgId}-${mode}-${platform}-${platformId}`;
}

export function evolveTrackingClaim(state: TrackingClaimState, event: TrackingClaimEvent): TrackingClaimState {
  switch (event.type) {
    case 'TrackingClaimed':
      return { holder: event.data.videoId, claimedAt: Date.parse(event.data.wallAt ?? event.data.at), claimedInWallTime: event.data.wallAt !== undefined };
    case 'TrackingReleased':
      return state.holder === event.data.videoId ? initialTrackingClaimState : state;
  }
}

/** The video that holds the link now, if any: one still monitoring or paused, or one being created. */
export function activeHolder(state: TrackingClaimState, holderVideo: HolderVideo, clocks: ClaimClocks): string | null {
  if (!state.holder) return null;
  const now = state.claimedInWallTime ? clocks.wallNow : clocks.now;
  const active = holderVideo.exists
    ? holderVideo.status === 'monitoring' || holderVideo.status === 'paused'
    : now.getTime() - (state.claimedAt ?? 0) < CLAIM_GRACE_MS;
  return active ? state.holder : null;
}

export function decideTrackingClaim(command: TrackingClaimCommand, state: TrackingClaimState): TrackingClaimEvent[] {
  const at = command.now.toISOString();
  const { videoId, orgId } = command;
  switch (command.type) {
    case 'Claim': {
      const holder = activeHolder(state, command.holderVideo, command);
      if (holder === videoId) return [];
      if (holder) throw new DomainError('already_exists', `The link is tracked by video ${holder}`);
      return [{ type: 'TrackingClaimed', data: { videoId, orgId, at, wallAt: command.wallNow.toISOString() } }];
    }
    case 'Release':
      return state.holder === videoId ? [{ type: 'TrackingReleased', data: { videoId, orgId, at } }] : [];
  }
}
