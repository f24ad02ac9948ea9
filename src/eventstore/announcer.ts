// Tells the log's readers (LISTEN es_events, in any process) that events were appended, by a
// NOTIFY sent after the appending transaction has committed rather than inside it.
//
// Why not inside it (as a trigger on es.events once did): PostgreSQL serializes the commits of
// all NOTIFYing transactions of the whole server behind one lock, held through each commit's
// WAL flush. Concurrent appends, one transaction each, then commit one at a time, one fsync
// each, instead of sharing flushes: with 64 concurrent appenders, 96% of the backends' time
// went to waiting for that lock (pg_stat_activity: Lock/object), at 440-670 appends/s against
// 1,600/s without the NOTIFY. A transaction that only NOTIFYs writes no WAL that must be
// flushed, so it holds the lock for microseconds.
//
// At most one NOTIFY is in flight: appends that commit meanwhile are covered by one more after
// it (the one in flight may have left before they committed). A lost NOTIFY (a failed
// statement, a crash right after a commit) costs latency, not events: subscriptions also poll.
import type pg from 'pg';
import { EVENTS_CHANNEL } from './postgres-schema.ts';
import { prepared } from '../db/prepared.ts';

const NOTIFY = prepared('select pg_notify($1, $2)');

/** The NOTIFY for events appended and committed; for callers appending inside a transaction of their own, after it commits. */
export async function announceAppended(db: pg.Pool | pg.ClientBase): Promise<void> {
  await db.query({ ...NOTIFY, values: [EVENTS_CHANNEL, ''] });
}

export class AppendAnnouncer {
  private sending: Promise<void> | undefined;
  private again = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Called after a commit that appended events; returns at once. */
  announce(): void {
    if (this.sending) {
      this.again = true;
      return;
    }
    this.sending = this.send();
  }

  /** Resolves once no NOTIFY is in flight or owed (before the pool is ended). */
  async idle(): Promise<void> {
    while (this.sending) await this.sending;
  }

  private async send(): Promise<void> {
    do {
      this.again = false;
      try {
        await announceAppended(this.pool);
      } catch {
        // Readers poll as well: a lost notification delays them, it loses nothing.
      }
    } while (this.again);
    // In the same tick as the last look at `again`, so no announce() can fall in between.
    this.sending = undefined;
  }
}
