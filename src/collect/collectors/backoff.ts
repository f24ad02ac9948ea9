// When a platform says "stop until T" (quota spent, 429, rate-limit window used up), every call
// before T would only fail again and burn what is left of the quota. A collector keeps one Backoff
// and asks it before each call.
import type { Clock } from '../../clock.ts';
import { type Unavailable, unavailable } from './http.ts';

export class Backoff {
  private until: Date | undefined;
  private reason = '';

  constructor(private readonly clock: Clock) {}

  /**
   * Refuse calls until `until` (a later block wins over an earlier one, never the other way),
   * and return the answer for the call that was just refused. A `until` already past (a
   * `Retry-After: 0`, a reset time behind this clock) blocks nothing: the answer is then a plain
   * unavailable, retried on the usual schedule.
   */
  block(until: Date, reason: string): Unavailable {
    if (!(this.until && this.until.getTime() >= until.getTime() && this.isBlocked())) {
      this.until = until;
      this.reason = reason;
    }
    return this.blocked() ?? unavailable(reason);
  }

  /** The answer to give instead of calling while blocked; undefined when calls may go out. */
  blocked(): Unavailable | undefined {
    if (!this.until || !this.isBlocked()) return undefined;
    return unavailable(this.reason, this.until);
  }

  private isBlocked(): boolean {
    return this.until !== undefined && this.clock.now().getTime() < this.until.getTime();
  }
}
