// Reactor: one e-mail to the organization when a video's tracking period ends naturally.
// It follows the log from its own checkpoint and records each e-mail in the outbox in the
// same transaction as that checkpoint; the outbox's sender sends it after the commit
// (src/notify/outbox.ts). So neither a restart nor a second process (every projector process
// runs one) records it twice, and a failed delivery is tried again.
import type { Pool } from 'pg';
import { Subscription, concatMap, from } from 'rxjs';
import { withTransaction } from '../db/pool.ts';
import { REACTOR_READ_INTERVAL_MS, advanceCheckpoint, readCheckpoint } from './checkpoint.ts';
import type { Migration } from '../db/migrate.ts';
import type { VideoCompleted } from '../domain/video.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import { findOrganizations, readVideos } from '../../projections/queries.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';
import { createMailer, type MailOptions } from './mailer.ts';
import { OutboxSender, recordMessages, type OutboxMessage } from './outbox.ts';
import { raceDeadline } from './timers.ts';

export type { MailOptions } from './mailer.ts';

export const notifyMigrations: readonly Migration[] = [
  {
    id: 'notify/001-sent',
    sql: `CREATE SCHEMA IF NOT EXISTS notify;
      CREATE TABLE notify.checkpoint (id int PRIMARY KEY DEFAULT 1, commit_position numeric NOT NULL, prepare_position numeric NOT NULL);
      CREATE TABLE notify.sent_emails (video_id text PRIMARY KEY, recipient text NOT NULL, sent_at timestamptz NOT NULL DEFAULT now());`,
  },
  {
    // sent_emails was a claim held open (in a transaction) while SMTP talked: it becomes the
    // outbox, and what it recorded as sent stays sent.
    id: 'notify/002-outbox',
    sql: `CREATE TABLE notify.outbox (
        message_id text PRIMARY KEY,
        file_name text NOT NULL,
        message jsonb NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        attempts int NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        last_error text,
        sent_at timestamptz
      );
      CREATE INDEX outbox_unsent ON notify.outbox (next_attempt_at) WHERE sent_at IS NULL;
      INSERT INTO notify.outbox (message_id, file_name, message, recorded_at, sent_at)
        SELECT '<' || video_id || '.completed@vidtrack>', video_id || '-completed', jsonb_build_object('to', recipient), sent_at, sent_at
        FROM notify.sent_emails;
      DROP TABLE notify.sent_emails;`,
  },
];

/** After a failure (database down, read models behind), start again from the checkpoint this much later. */
const RETRY_MS = 5_000;

/** The Message-ID of a video's completion e-mail: the same on every attempt, so receivers can drop a repeat. */
export const completionMessageId = (videoId: string) => `<${videoId}.completed@vidtrack>`;

export class CompletionEmails {
  private subscription: Subscription | null = null;
  private sender: OutboxSender | null = null;
  private closeMailer: () => void = () => undefined;
  private inFlight: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly watcher: ProjectionWatcher,
    private readonly mail: MailOptions,
  ) {}

  async start(onError: (error: unknown) => void): Promise<void> {
    this.stopped = false;
    if (!this.sender) {
      const mailer = createMailer(this.mail);
      this.sender = new OutboxSender(this.pool, mailer, onError);
      this.closeMailer = () => mailer.close();
    }
    // What was recorded but not sent before a restart goes first.
    this.sender.kick();
    const from$ = await readCheckpoint(this.pool, 'notify.checkpoint');
    // Stopped while the checkpoint was read (a restart after a failure): no subscription after stop().
    if (this.stopped) return;
    // The page that failed before a retry must not fail the new subscription's first `ready()`.
    this.inFlight = Promise.resolve();
    this.subscription = this.store
      .subscribeAll(from$, { batchSize: 5_000, ready: () => this.inFlight, minReadIntervalMs: REACTOR_READ_INTERVAL_MS })
      .pipe(concatMap((page) => from((this.inFlight = this.handlePage(page, onError)))))
      .subscribe({
        error: (error) => {
          // A stop() while a page was in flight ends here too: that is no failure to retry.
          if (this.stopped) return;
          onError(error);
          this.subscription = null;
          this.retry = setTimeout(() => {
            this.retry = null;
            if (!this.stopped) this.start(onError).catch((failure: unknown) => this.failedStart(failure, onError));
          }, RETRY_MS);
          this.retry.unref();
        },
      });
  }

  /** A start that failed (database down) is tried again later, like a failed page. */
  private failedStart(error: unknown, onError: (error: unknown) => void): void {
    if (this.stopped) return;
    onError(error);
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.stopped) this.start(onError).catch((failure: unknown) => this.failedStart(failure, onError));
    }, RETRY_MS);
    this.retry.unref();
  }

  private async handlePage(page: RecordedEvent[], onError: (error: unknown) => void): Promise<void> {
    if (page.length === 0) return;
    const last = page[page.length - 1]!.position;
    const completions = page.filter((e) => e.type === 'VideoCompleted' && (e.data as VideoCompleted['data']).reason === 'period_ended').map((e) => e.data as VideoCompleted['data']);
    const messages: OutboxMessage[] = [];
    if (completions.length > 0) {
      // The message reads the videos and organizations read models (only facts that never
      // change after creation): give them a moment to catch up.
      const caughtUp = await this.watcher.waitFor(last, 10_000);
      if (this.stopped) throw new Error('stopped');
      const [orgs, videos] = await Promise.all([
        findOrganizations(this.pool, [...new Set(completions.map((c) => c.orgId))]),
        readVideos(this.pool, completions.map((c) => c.videoId)),
      ]);
      for (const { videoId, orgId } of completions) {
        const [org, video] = [orgs.get(orgId), videos.get(videoId)];
        if (!org || !video) {
          // Behind: fail the page and try again later, rather than lose the e-mail. Caught up
          // and still missing (the event that made the row was parked): the row will not
          // come, and waiting for it would hold every later e-mail back. Said, and passed.
          if (!caughtUp) throw new Error(`video ${videoId} or organization ${orgId} is not in the read models yet`);
          onError(new Error(`no completion e-mail for video ${videoId}: it or organization ${orgId} is missing from the read models, which have passed its completion (a parked event?)`));
          continue;
        }
        messages.push({
          messageId: completionMessageId(videoId),
          fileName: `${videoId}-completed`,
          message: {
            from: this.mail.from,
            to: org.email,
            subject: `Tracking completed: ${video.platform} video ${video.video_link}`,
            text: [
              `Hello ${org.name},`,
              '',
              `Tracking of ${video.video_link} (${video.platform}) has completed after ${video.duration_days} day(s).`,
              `Video id: ${videoId}`,
              `Job id: ${video.job_id}`,
              `Snapshots are available at GET /api/v1/videos/${videoId}.`,
              '',
              '-- vidtrack',
            ].join('\n'),
          },
        });
      }
    }
    if (messages.length === 0) {
      // Nothing to record: the checkpoint alone, one statement.
      await advanceCheckpoint(this.pool, 'notify.checkpoint', last);
      return;
    }
    // The messages and the checkpoint that passes their events commit together: a restart
    // neither loses an e-mail nor records one twice. Nothing is sent in here.
    await withTransaction(this.pool, async (client) => {
      await recordMessages(client, messages);
      await advanceCheckpoint(client, 'notify.checkpoint', last);
    });
    // Another process may have recorded them first and died before sending: look either way.
    if (completions.length > 0) this.sender?.kick();
  }

  /**
   * Stops following the log and sending; resolves once the page and the send in flight are
   * done, or after `waitMs` (a send still talking to a slow server is claimed for ten
   * minutes and sent again after that, by whichever process runs then).
   */
  async stop(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.subscription?.unsubscribe();
    this.subscription = null;
    const deadline = performance.now() + waitMs;
    await Promise.all([
      raceDeadline(this.inFlight.catch(() => undefined), waitMs),
      this.sender?.stop(Math.max(0, deadline - performance.now())),
    ]);
    this.closeMailer();
    this.sender = null;
  }
}
