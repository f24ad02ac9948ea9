// Per-key request counts and last use (spec §5.3), without a database write per request:
// each API process counts in memory and adds its counts to the table in one statement every
// few seconds, and once more when it stops. A flush that fails keeps its counts for the next.
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';

export const KEY_USAGE_FLUSH_MS = 3_000;

interface Tally {
  requests: number;
  lastUsedAt: Date;
}

export class KeyUsageCounter {
  private pending = new Map<string, Tally>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly onError: (error: unknown) => void,
  ) {}

  count(keyId: string): void {
    const tally = this.pending.get(keyId);
    const now = this.clock.now();
    if (tally) {
      tally.requests++;
      tally.lastUsedAt = now;
    } else this.pending.set(keyId, { requests: 1, lastUsedAt: now });
  }

  start(everyMs = KEY_USAGE_FLUSH_MS): void {
    this.timer = setInterval(() => void this.flush(), everyMs);
    this.timer.unref();
  }

  /** Adds what was counted since the last flush; flushes never overlap. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    const ids = [...batch.keys()];
    try {
      await this.pool.query(
        `INSERT INTO dashboard.key_usage (key_id, requests, last_used_at)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::timestamptz[])
         ON CONFLICT (key_id) DO UPDATE SET requests = key_usage.requests + excluded.requests,
           last_used_at = greatest(key_usage.last_used_at, excluded.last_used_at)`,
        [ids, ids.map((id) => batch.get(id)!.requests), ids.map((id) => batch.get(id)!.lastUsedAt)],
      );
    } catch (error) {
      // Counted again with what arrives meanwhile, so nothing is lost to a database hiccup.
      for (const [id, tally] of batch) {
        const later = this.pending.get(id);
        this.pending.set(id, later ? { requests: later.requests + tally.requests, lastUsedAt: later.lastUsedAt } : tally);
      }
      this.onError(error);
    }
  }
}
