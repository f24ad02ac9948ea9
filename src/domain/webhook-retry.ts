// When a failed webhook delivery is tried again: Standard Webhooks' schedule (at once, then
// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h), on the service clock, with jitter so that an
// endpoint that comes back is not hit by every delivery in the same second.

/** Waits after the 1st, 2nd, ... failed attempt; after the last, the delivery has failed. */
export const RETRY_DELAYS_MS: readonly number[] = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
/** Up to this share of a wait is added at random. */
export const JITTER = 0.1;
/** A Retry-After (wall time) longer than this is cut to it. */
export const MAX_RETRY_AFTER_MS = 10 * 3_600_000;
/** An endpoint whose deliveries have all failed for this long is disabled. */
export const FAILING_ENDPOINT_DISABLE_MS = 5 * 24 * 3_600_000;

export type AttemptOutcome =
  | { kind: 'delivered' }
  /** 410 Gone: the receiver says the endpoint is no more; it is disabled. */
  | { kind: 'gone' }
  /** Anything else: `retryAfterMs` (service time) when a 429 or 503 said how long to wait. */
  | { kind: 'failed'; retryAfterMs: number | null };

/**
 * After attempt number `attempts` (1-based) ended with `outcome`: null when nothing is left
 * to try, else how long to wait. `random` in [0, 1). A Retry-After longer than the schedule's
 * wait is honoured; a shorter one (`Retry-After: 0` from a receiver that is restarting) does not
 * bring the retry sooner, or eight attempts would be spent in seconds.
 */
export function nextAttemptDelay(attempts: number, outcome: AttemptOutcome, random: number): number | null {
  if (outcome.kind !== 'failed' || attempts >= MAX_ATTEMPTS) return null;
  const scheduled = RETRY_DELAYS_MS[attempts - 1]!;
  const wait = scheduled + Math.floor(scheduled * JITTER * random);
  return Math.max(wait, outcome.retryAfterMs ?? 0);
}

/**
 * A receiver's Retry-After is real time (it is the receiver's own rate limit, and like the
 * service's rate-limit windows it does not speed up with TIME_SCALE): as a wait on the service
 * clock, after a cap.
 */
export function retryAfterOnServiceClock(wallMs: number | null, timeScale: number): number | null {
  if (wallMs === null) return null;
  return Math.min(wallMs, MAX_RETRY_AFTER_MS) * timeScale;
}

/** A Retry-After header (seconds, or an HTTP date) in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(header: string | undefined, now: number): number | null {
  if (!header) return null;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** How an HTTP answer counts (status null: no answer: a network error or the timeout). */
export function outcomeOf(status: number | null, retryAfterMs: number | null): AttemptOutcome {
  if (status !== null && status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 410) return { kind: 'gone' };
  return { kind: 'failed', retryAfterMs: status === 429 || status === 503 ? retryAfterMs : null };
}
