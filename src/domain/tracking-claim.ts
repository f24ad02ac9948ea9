// Tracking-claim stream (`tracking-<org>-<mode>-<platform>-<platformId>`): who tracks a link now.
// It makes "same link tracked twice -> 409" race-free: two concurrent tracks of one link
// append to this stream at the same expected revision and only one wins.
import type { KeyMode, Platform } from './platform.ts';

export type TrackingClaimed = { type: 'TrackingClaimed'; data: { videoId: string; orgId: string; at: string } };

export function streamIdOfTrackingClaim(orgId: string, mode: KeyMode, platform: Platform, platformId: string): string {
  return `tracking-${orgId}-${mode}-${platform}-${platformId}`;
}
