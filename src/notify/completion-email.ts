// Reactor: one e-mail to the organization when a video's tracking period ends naturally.
// It follows the log from its own checkpoint and records each e-mail sent in the same
// transaction as the checkpoint, so a restart does not send it twice.
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

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly watcher: ProjectionWatcher,
    private readonly mail: MailOptions,
  ) {}

  async start(onError: (error: unknown) => void): Promise<void> {
    const { rows } = await this.pool.query(`SELECT commit_position, prepare_position FROM notify.checkpoint WHERE id = 1`);
    const from$: Position | null = rows[0] ? { commit: BigInt(rows[0].commit_position), prepare: BigInt(rows[0].prepare_position) } : null;
    const mailer = createMailer(this.mail);
    let inFlight: Promise<void> = Promise.resolve();
    this.subscription = this.store
      .subscribeAll(from$, { batchSize: 1000, ready: () => inFlight })
      .pipe(concatMap((page) => from((inFlight = this.handlePage(page, mailer.deliver)))))
      .subscribe({
        error: (error) => {
          // An SMTP server that is down must not lose an e-mail: start again from the checkpoint, later.
          onError(error);
          setTimeout(() => void this.start(onError).catch(onError), 5_000).unref();
        },
      });
  }

  private async handlePage(page: RecordedEvent[], deliver: ReturnType<typeof createMailer>['deliver']): Promise<void> {
    if (page.length === 0) return;
    const last = page[page.length - 1]!.position;
    const completions = page.filter((e) => e.type === 'VideoCompleted' && (e.data as VideoCompleted['data']).reason === 'period_ended');
    const sent: Array<{ videoId: string; recipient: string }> = [];
    if (completions.length > 0) {
      // The message reads the videos and organizations read models: let them catch up first.
      await this.watcher.waitFor(last, 10_000);
      const { rows } = await this.pool.query<{ video_id: string }>(`SELECT video_id FROM notify.sent_emails WHERE video_id = ANY($1::text[])`, [
        completions.map((e) => (e.data as VideoCompleted['data']).videoId),
      ]);
      const already = new Set(rows.map((r) => r.video_id));
      for (const event of completions) {
        const { videoId, orgId } = event.data as VideoCompleted['data'];
        if (already.has(videoId)) continue;
        const [org, video] = await Promise.all([findOrganization(this.pool, orgId), readVideo(this.pool, videoId)]);
        if (!org || !video) continue;
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
        sent.push({ videoId, recipient: org.email });
      }
    }
    await withTransaction(this.pool, async (client) => {
      if (sent.length > 0) {
        await client.query(`INSERT INTO notify.sent_emails (video_id, recipient) SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`, [
          sent.map((s) => s.videoId),
          sent.map((s) => s.recipient),
        ]);
      }
      await client.query(
        `INSERT INTO notify.checkpoint (id, commit_position, prepare_position) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET commit_position = excluded.commit_position, prepare_position = excluded.prepare_position`,
        [last.commit.toString(), last.prepare.toString()],
      );
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}
