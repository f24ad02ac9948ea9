// Which failed collections count toward FAILED_HOURS_BEFORE_ERROR. DESIGN §8: a video goes to
// `error` when the platform says private/deleted/unreachable for 3 *hourly attempts* in a row.
// A scheduler catching up after an outage tries slots whose hours are long over, one sweep
// after the other within moments: counting each of those as a failed hour would turn one short
// blip into three "hours" and a terminal error. Such a late slot is still recorded as failed
// (it is missed: no snapshot, no charge) but leaves the count as it was. So does a slot our own
// limits (quota, rate-limit window) kept us from asking for: only the platform's answers and
// real failures to reach it count.
import { slotAt } from './video.ts';
import type { FailureReason } from './video.ts';

/**
 * True when a failure of `slot` recorded at `now` stands for an hour of attempts: a platform's
 * answer (absent, private, deleted, unstorable) given within the slot's own hour, or an
 * unreachable slot recorded by the end of the hour after it (it is retried through its own hour
 * and recorded once that hour is over, ../collect/work.ts).
 */
export function countsAsFailedHour(startedAt: number, slot: number, reason: FailureReason, now: number): boolean {
  // Our own limit held the call back: the platform said nothing about the video.
  if (reason === 'own_limit') return false;
  const lastHour = reason === 'unreachable' ? slot + 1 : slot;
  return slotAt(startedAt, now) <= lastHour;
}
