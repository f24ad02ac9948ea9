// When a platform says "stop until T" (quota spent, 429, rate-limit window used up), every call
// before T would only fail again and burn what is left of the quota. A collector keeps one Backoff
// and asks it before each call. Its answers are marked `ownLimit`: the limit is on our use of the
// platform, not on the video, so the slots it costs do not count toward a video's `error`.
import { DAY_MS, type Clock } from '../../clock.ts';
import { type Unavailable, unavailable } from './http.ts';

/**
 * The longest block kept, whatever the platform says: a day, the longest any of them asks for
 * (a daily quota). A reset time years away, or past what a Date can hold, would otherwise stop
 * the platform's collection until the process restarts.
 */
export const MAX_BLOCK_MS = DAY_MS;

export class Backoff {
  private until: Date | undefined;
  private reason = '';

  constructor(private readonly clock: Clock) {}

  /**
   * Refuse calls until `until` (a later block wins over an earlier one, never the other way),
   * and return the answer for the call that was just refused. A `until` already past (a
   * `Retry-After: 0`, a reset time behind this clock) blocks nothing: the answer is then a plain
   * unavailable, retried on the usual schedule, as is a `until` that is no date at all.
   * `until` may be given in epoch milliseconds: a time past what a Date can hold (even Infinity)
   * is then still a time, held to MAX_BLOCK_MS, where `new Date` of it would be no date.
   */
  block(until: Date | number, reason: string): Unavailable {
    const at = Math.min(typeof until === 'number' ? until : until.getTime(), this.clock.now().getTime() + MAX_BLOCK_MS);
    if (Number.isFinite(at) && !(this.until && this.until.getTime() >= at && this.isBlocked())) {
      this.until = new Date(at);
      this.reason = reason;
    }
    return this.blocked() ?? ownLimit(reason);
  }

  /** The answer to give instead of calling while blocked; undefined when calls may go out. */
  blocked(): Unavailable | undefined {
    if (!this.until || !this.isBlocked()) return undefined;
    return ownLimit(this.reason, this.until);
  }

  private isBlocked(): boolean {
    return this.until !== undefined && this.clock.now().getTime() < this.until.getTime();
  }
}

/** An answer for a call our own limit held back (or a limit the platform set on us refused). */
export function ownLimit(message: string, until?: Date): Unavailable {
  return { ...unavailable(message, until), ownLimit: true };
}
