// When a link's claim lapses while its video is not written: CLAIM_GRACE_MS after the claim, in
// wall time for claims that record it (a high TIME_SCALE runs service time far ahead between a
// track's two appends), in service time for claims written before they did.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { activeHolder, CLAIM_GRACE_MS, evolveTrackingClaim, initialTrackingClaimState, type TrackingClaimed } from '../../src/domain/tracking-claim.ts';

const notWritten = { exists: false } as const;
const at = (ms: number) => new Date(Date.parse('2026-03-01T00:00:00.000Z') + ms);

describe('a claim whose video is not written yet', () => {
  test('holds for CLAIM_GRACE_MS of wall time, however much service time passes', () => {
    const claimed: TrackingClaimed = { type: 'TrackingClaimed', data: { videoId: 'v', orgId: 'o', at: at(0).toISOString(), wallAt: at(0).toISOString() } };
    const state = evolveTrackingClaim(initialTrackingClaimState, claimed);
    assert.equal(activeHolder(state, notWritten, { now: at(100 * CLAIM_GRACE_MS), wallNow: at(CLAIM_GRACE_MS - 1) }), 'v');
    assert.equal(activeHolder(state, notWritten, { now: at(0), wallNow: at(CLAIM_GRACE_MS) }), null);
  });

  test('written without its wall time (before it was recorded), lapses in service time', () => {
    const claimed: TrackingClaimed = { type: 'TrackingClaimed', data: { videoId: 'v', orgId: 'o', at: at(0).toISOString() } };
    const state = evolveTrackingClaim(initialTrackingClaimState, claimed);
    assert.equal(activeHolder(state, notWritten, { now: at(CLAIM_GRACE_MS - 1), wallNow: at(-100 * CLAIM_GRACE_MS) }), 'v');
    assert.equal(activeHolder(state, notWritten, { now: at(CLAIM_GRACE_MS), wallNow: at(-100 * CLAIM_GRACE_MS) }), null);
  });
});
