// When a platform says "stop until T" (quota spent, 429, rate-limit window used up), every call
// before T would only fail again and burn what is left of the quota. A collector keeps one Backoff
// and asks it before each call.
import type { Clock } from '../../clock.ts';
import { type Unavailable, unavailable } from './http.ts';

export class Backoff {
  private until: Date | undefined;
  private reason = '';

  constructor(private readonly clock: Clock) {}

  /** Refuse calls until `until`. A later block wins over an earlier one, never the other way. */
  block(until: Date, reason: string): void {
    if (this.until && this.until.getTime() >= until.getTime() && this.isBlocked()) return;
    this.until = until;
    this.reason = reason;
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
