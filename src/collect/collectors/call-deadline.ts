// How long one collect() call may spend asking its platform (batch.ts, CALL_DEADLINE_MS). It is
// checked before every request, the pages of a walk (Instagram's owner media, TikTok's has_more)
// included, and each request waits no longer than the time left: a platform answering each page
// just inside the request timeout would otherwise hold the call for pages × that timeout.
//
// What the deadline leaves unasked, or cuts short, is answered `unavailable` with `ownLimit`: the
// limit is ours, so the slot is retried and, once its hour is over, missed without counting
// toward `error` (src/domain/failed-hours.ts). A platform that is really down still counts: the
// first request of every call has its whole timeout, and its timeout or 5xx is the answer.
import { ownLimit } from './backoff.ts';
import type { Failure, Unavailable } from './http.ts';

export class CallDeadline {
  private readonly at: number;

  constructor(
    private readonly label: string,
    private readonly ms: number,
  ) {
    this.at = performance.now() + ms;
  }

  /** The answer for a request not sent because the time is up; undefined while time is left. */
  expired(): Unavailable | undefined {
    if (performance.now() < this.at) return undefined;
    return ownLimit(`${this.label} not asked: this call to it took over ${this.ms / 1000} s`);
  }

  /** A request's timeout: its own, or the time left when that is shorter (never below 1 ms). */
  timeout(requestTimeoutMs: number): number {
    return Math.max(1, Math.min(requestTimeoutMs, Math.ceil(this.at - performance.now())));
  }

  /**
   * A request's failure as the call reports it: when its timeout was cut to the time left and
   * the time is now up, the platform was not given its own timeout, so the failure is ours.
   */
  failure(answer: Failure, timeoutMs: number, requestTimeoutMs: number): Failure {
    if (timeoutMs >= requestTimeoutMs || performance.now() < this.at) return answer;
    return ownLimit(`${this.label} did not answer within what was left of this call's ${this.ms / 1000} s`);
  }
}
