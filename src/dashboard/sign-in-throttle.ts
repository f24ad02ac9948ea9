// Sign-in attempts per account: after 10 in 15 minutes, that account's sign-in waits out the
// window, whoever tries (the per-address limit is @fastify/rate-limit's, on the route). An
// attempt is counted when it starts, before its password is checked (scrypt takes a while):
// attempts sent at once cannot all pass while none has failed yet. A success takes back its own
// attempt but not the wrong ones before it: an address can have a password in several
// organizations, and one who knows one of them (an owner who invited the address to their own
// organization and accepted) must not reset the count between guesses at another. Kept in this
// process's memory: an attacker spread over replicas gets one allowance per replica.
import type { Clock } from '../clock.ts';
import { normalizeEmail } from '../domain/members.ts';

const MAX_ATTEMPTS = 10;
const WINDOW_MS = 15 * 60_000;
const MAX_TRACKED = 100_000;

export class SignInThrottle {
  private readonly attempts = new Map<string, { count: number; since: number }>();

  constructor(private readonly wall: Clock) {}

  /**
   * Counts an attempt at this account's password, to be made now: false (nothing counted) when
   * the account has had its 10 in the window, those still being checked included.
   */
  attempt(email: string): boolean {
    const key = normalizeEmail(email);
    const now = this.wall.now().getTime();
    const entry = this.attempts.get(key);
    if (entry && now - entry.since <= WINDOW_MS) {
      if (entry.count >= MAX_ATTEMPTS) return false;
      entry.count++;
      return true;
    }
    this.attempts.delete(key);
    // Bounded: the oldest entry goes first (a Map keeps insertion order).
    if (this.attempts.size >= MAX_TRACKED) this.attempts.delete(this.attempts.keys().next().value!);
    this.attempts.set(key, { count: 1, since: now });
    return true;
  }

  /** Whole seconds until the account's window ends (what a refusal's Retry-After says). */
  secondsLeft(email: string): number {
    const entry = this.attempts.get(normalizeEmail(email));
    if (!entry) return 0;
    return Math.max(0, Math.ceil((entry.since + WINDOW_MS - this.wall.now().getTime()) / 1000));
  }

  /** The password was right: this attempt is not counted. */
  succeeded(email: string): void {
    const entry = this.attempts.get(normalizeEmail(email));
    if (entry && entry.count > 0) entry.count--;
  }
}
