// Reactor: one e-mail to the organization when a video's tracking period ends naturally.
// It follows the log from its own checkpoint; each e-mail is claimed by a row in
// notify.sent_emails that commits once the message is handed over, so neither a restart nor
// a second process (every projector process runs one) sends it twice, and a failed delivery
// is tried again. A crash between handing it over and the commit can still repeat one.
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';
import type { Pool } from 'pg';
import { Subscription, concatMap, from } from 'rxjs';
import { withTransaction } from '../db/pool.ts';
import type { Migration } from '../db/migrate.ts';
import type { VideoCompleted } from '../domain/video.ts';
import type { EventStore, Position, RecordedEvent } from '../eventstore/port.ts';
import { findOrganization, readVideo } from '../../projections/queries.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';

export const notifyMigrations: readonly Migration[] = [
  {
    id: 'notify/001-sent',
    sql: `CREATE SCHEMA IF NOT EXISTS notify;
      CREATE TABLE notify.checkpoint (id int PRIMARY KEY DEFAULT 1, commit_position numeric NOT NULL, prepare_position numeric NOT NULL);
      CREATE TABLE notify.sent_emails (video_id text PRIMARY KEY, recipient text NOT NULL, sent_at timestamptz NOT NULL DEFAULT now());`,
  },
];

/** After a failure (SMTP down, read models behind), start again from the checkpoint this much later. */
const RETRY_MS = 5_000;

export interface MailOptions {
  /** smtp://host:port; without it, messages are written as .eml files to `outbox`. */
  smtpUrl?: string;
  from: string;
  outbox: string;
}

export function createMailer(options: MailOptions): { transporter: Transporter; deliver: (message: SendMailOptions, name: string) => Promise<void> } {
  if (options.smtpUrl) {
    const transporter = nodemailer.createTransport(options.smtpUrl);
    return { transporter, deliver: async (message) => void (await transporter.sendMail(message)) };
  }
  const transporter = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    transporter,
    async deliver(message, name) {
      const info = await transporter.sendMail(message);
      await fs.mkdir(options.outbox, { recursive: true });
      await fs.writeFile(path.join(options.outbox, `${name}.eml`), info.message as Buffer);
    },
  };
}

export class CompletionEmails {
  private subscription: Subscription | null = null;
  private transporter: Transporter | null = null;
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
    const { rows } = await this.pool.query(`SELECT commit_position, prepare_position FROM notify.checkpoint WHERE id = 1`);
    const from$: Position | null = rows[0] ? { commit: BigInt(rows[0].commit_position), prepare: BigInt(rows[0].prepare_position) } : null;
    const mailer = createMailer(this.mail);
    this.transporter = mailer.transporter;
    // The page that failed before a retry must not fail the new subscription's first `ready()`.
    this.inFlight = Promise.resolve();
    this.subscription = this.store
      .subscribeAll(from$, { batchSize: 1000, ready: () => this.inFlight })
      .pipe(concatMap((page) => from((this.inFlight = this.handlePage(page, mailer.deliver)))))
      .subscribe({
        error: (error) => {
          mailer.transporter.close();
          // A stop() while a page was in flight ends here too: that is no failure to retry.
          if (this.stopped) return;
          // An SMTP server that is down must not lose an e-mail: start again from the checkpoint, later.
          onError(error);
          this.retry = setTimeout(() => {
            this.retry = null;
            if (!this.stopped) void this.start(onError).catch(onError);
          }, RETRY_MS);
          this.retry.unref();
        },
      });
  }

  private async handlePage(page: RecordedEvent[], deliver: ReturnType<typeof createMailer>['deliver']): Promise<void> {
    if (page.length === 0) return;
    const last = page[page.length - 1]!.position;
    const completions = page.filter((e) => e.type === 'VideoCompleted' && (e.data as VideoCompleted['data']).reason === 'period_ended');
    if (completions.length > 0) {
      // The message reads the videos and organizations read models (only facts that never
      // change after creation): give them a moment to catch up.
      await this.watcher.waitFor(last, 10_000);
      for (const event of completions) {
        if (this.stopped) throw new Error('stopped');
        const { videoId, orgId } = event.data as VideoCompleted['data'];
        const [org, video] = await Promise.all([findOrganization(this.pool, orgId), readVideo(this.pool, videoId)]);
        // Skipping it would lose the e-mail for good: fail the page and try again later.
        if (!org || !video) throw new Error(`video ${videoId} or organization ${orgId} is not in the read models yet`);
        // The row claims the e-mail and commits only once it is sent: another reactor (a
        // second process, or this one after a restart) waits on the row and then skips it,
        // and a failed delivery rolls the claim back so the retry sends it.
        await withTransaction(this.pool, async (client) => {
          const claimed = await client.query(
            `INSERT INTO notify.sent_emails (video_id, recipient) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING video_id`,
            [videoId, org.email],
          );
          if (claimed.rowCount === 0) return;
          await deliver(
            {
              from: this.mail.from,
              to: org.email,
              messageId: `<${videoId}.completed@vidtrack>`,
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
            `${videoId}-completed`,
          );
        });
      }
    }
    // Never moves back: with two reactors the slower one must not rewind the faster one's checkpoint.
    await this.pool.query(
      `INSERT INTO notify.checkpoint (id, commit_position, prepare_position) VALUES (1, $1, $2)
       ON CONFLICT (id) DO UPDATE SET commit_position = excluded.commit_position, prepare_position = excluded.prepare_position
       WHERE (notify.checkpoint.commit_position, notify.checkpoint.prepare_position) < (excluded.commit_position, excluded.prepare_position)`,
      [last.commit.toString(), last.prepare.toString()],
    );
  }

  /** Stops following the log; resolves once the page in flight (and its e-mail) is done. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.subscription?.unsubscribe();
    this.subscription = null;
    await this.inFlight.catch(() => undefined);
    this.transporter?.close();
    this.transporter = null;
  }
}
