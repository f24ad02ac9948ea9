// Failed sign-ins per account: after 10 in 15 minutes, that account's sign-in waits out the
// window, whoever tries (the per-address limit is @fastify/rate-limit's, on the route). Kept
// in this process's memory: an attacker spread over replicas gets one allowance per replica.
import type { Clock } from '../clock.ts';
import { normalizeEmail } from '../domain/members.ts';

const MAX_FAILURES = 10;
const WINDOW_MS = 15 * 60_000;
const MAX_TRACKED = 100_000;

export class SignInThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();

  constructor(private readonly wall: Clock) {}

  allows(email: string): boolean {
    const entry = this.failures.get(normalizeEmail(email));
    if (!entry) return true;
    if (this.wall.now().getTime() - entry.since > WINDOW_MS) {
      this.failures.delete(normalizeEmail(email));
      return true;
    }
    return entry.count < MAX_FAILURES;
  }

  failed(email: string): void {
    const key = normalizeEmail(email);
    const now = this.wall.now().getTime();
    const entry = this.failures.get(key);
    if (entry && now - entry.since <= WINDOW_MS) entry.count++;
    else {
      // Bounded: the oldest entry goes first (a Map keeps insertion order).
      if (this.failures.size >= MAX_TRACKED) this.failures.delete(this.failures.keys().next().value!);
      this.failures.set(key, { count: 1, since: now });
    }
  }

  succeeded(email: string): void {
    this.failures.delete(normalizeEmail(email));
  }
}
