// The e-mail outbox: a message is recorded in PostgreSQL in the same transaction as the
// reactor's checkpoint, sent after that commit with no transaction open, then marked sent.
// No external I/O happens inside a write transaction (src/eventstore/postgres.ts says why):
// a slow SMTP server delays only the e-mails, never a reader of the log.
//
// Exactly once, as far as SMTP allows: a message is recorded once (its Message-ID is its
// key), and a sender claims it before sending by moving its next attempt ten minutes ahead,
// and gives the send up (closing the SMTP connection) at half of that, so two processes never
// send it at once. A crash after the send and before the mark repeats it later, with the same
// Message-ID, which receivers use to drop the duplicate.
import type { ClientBase, Pool } from 'pg';
import type { SendMailOptions } from 'nodemailer';
import type { Mailer } from './mailer.ts';
import { raceDeadline, WakeTimer } from './timers.ts';

export interface OutboxMessage {
  /** The Message-ID header, e.g. `<id.completed@vidtrack>`: the same on every attempt. */
  messageId: string;
  /** Names the .eml file when there is no SMTP server. */
  fileName: string;
  message: Pick<SendMailOptions, 'from' | 'to' | 'subject' | 'text'>;
}

export interface OutboxSenderOptions {
  /** How long a claim on a message lasts (default ten minutes); shorter in tests. */
  claimMs?: number;
}

const CLAIM_MS = 10 * 60_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 5 * 60_000;
/** After the database failed the sender: try again this much later. */
const DATABASE_RETRY_MS = 5_000;

/** Records messages to send; call inside the transaction that commits what they announce. */
export async function recordMessages(client: ClientBase, messages: readonly OutboxMessage[]): Promise<void> {
  if (messages.length === 0) return;
  await client.query(
    `INSERT INTO notify.outbox (message_id, file_name, message)
     SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[]) ON CONFLICT (message_id) DO NOTHING`,
    [messages.map((m) => m.messageId), messages.map((m) => m.fileName), messages.map((m) => JSON.stringify(m.message))],
  );
}

interface Claimed {
  message_id: string;
  file_name: string;
  message: OutboxMessage['message'];
  attempts: number;
}

export class OutboxSender {
  private draining: Promise<void> | null = null;
  private again = false;
  private readonly wakeTimer = new WakeTimer(() => this.kick());
  /** Sent, but the mark did not reach the database yet: marked first on the next pass. */
  private unmarked = new Set<string>();
  private stopped = false;
  private readonly claimMs: number;

  constructor(
    private readonly pool: Pool,
    private readonly mailer: Mailer,
    private readonly onError: (error: unknown) => void,
    options: OutboxSenderOptions = {},
  ) {
    this.claimMs = options.claimMs ?? CLAIM_MS;
  }

  /** Sends whatever is due now (messages just recorded, or left over from before a restart). */
  kick(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.wakeTimer.clear();
    this.draining = this.drain()
      .catch((error: unknown) => {
        this.onError(error);
        this.wakeIn(DATABASE_RETRY_MS);
      })
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async drain(): Promise<void> {
    for (const id of this.unmarked) await this.markSent(id);
    while (!this.stopped) {
      // Taken before the claim, whose time (on the database's clock) starts no earlier than this.
      const claimedAt = performance.now();
      const { rows } = await this.pool.query<Claimed>(
        `UPDATE notify.outbox SET next_attempt_at = now() + $1 * interval '1 millisecond', attempts = attempts + 1
         WHERE message_id = (SELECT message_id FROM notify.outbox WHERE sent_at IS NULL AND next_attempt_at <= now()
                             ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING message_id, file_name, message, attempts`,
        [this.claimMs],
      );
      const claimed = rows[0];
      if (!claimed) break;
      const giveUp = this.giveUpAt(claimedAt + this.claimMs / 2);
      try {
        await this.mailer.deliver({ ...claimed.message, messageId: claimed.message_id, signal: giveUp.signal }, claimed.file_name);
      } catch (failure) {
        const error: unknown = giveUp.signal.aborted ? giveUp.signal.reason : failure;
        this.onError(error);
        const retryMs = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (claimed.attempts - 1));
        await this.pool.query(
          `UPDATE notify.outbox SET next_attempt_at = now() + $2 * interval '1 millisecond', last_error = $3 WHERE message_id = $1`,
          [claimed.message_id, retryMs, String(error)],
        );
        continue;
      } finally {
        giveUp.clear();
      }
      this.unmarked.add(claimed.message_id);
      await this.markSent(claimed.message_id);
    }
    if (this.stopped) return;
    // Messages waiting for a retry, or claimed by a sender that may have died: look again then.
    // (NULL when nothing waits: then nothing is timed, and only a new message wakes the sender.)
    const { rows } = await this.pool.query<{ wait_ms: number | null }>(
      `SELECT (extract(epoch FROM min(next_attempt_at) - now()) * 1000)::float8 AS wait_ms FROM notify.outbox WHERE sent_at IS NULL`,
    );
    const waitMs = rows[0]?.wait_ms;
    if (waitMs !== null && waitMs !== undefined) this.wakeIn(Math.max(0, Math.ceil(waitMs)) + 10);
  }

  private async markSent(messageId: string): Promise<void> {
    await this.pool.query(`UPDATE notify.outbox SET sent_at = now(), last_error = NULL WHERE message_id = $1`, [messageId]);
    this.unmarked.delete(messageId);
  }

  /**
   * Aborts the send (nodemailer closes the SMTP connection) at `deadline`: the SMTP timeouts end
   * only a silent conversation, and a server that trickles its bytes would hold the send past the
   * claim, when another sender claims and sends the message again. Half the claim leaves the
   * other half for the abort, the retry's write and a late timer.
   */
  private giveUpAt(deadline: number): { signal: AbortSignal; clear: () => void } {
    const controller = new AbortController();
    const ms = Math.max(0, deadline - performance.now());
    const timer = setTimeout(() => controller.abort(new Error(`send abandoned after ${Math.round(ms)} ms, before the claim on it runs out; tried again later`)), ms);
    return { signal: controller.signal, clear: () => clearTimeout(timer) };
  }

  private wakeIn(ms: number): void {
    if (!this.stopped) this.wakeTimer.in(ms);
  }

  /** No new send starts; resolves once the one under way has ended, or after `waitMs`. */
  async stop(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    this.wakeTimer.clear();
    const draining = this.draining;
    if (!draining) return;
    await raceDeadline(draining, waitMs);
  }
}
