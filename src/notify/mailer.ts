// How a message leaves: over SMTP (SMTP_URL), or as an .eml file in the data folder.
import fs from 'node:fs/promises';
import path from 'node:path';
import nodemailer, { type SendMailOptions, type Transporter } from 'nodemailer';

export interface MailOptions {
  /** smtp://host:port; without it, messages are written as .eml files to `outbox`. */
  smtpUrl?: string;
  from: string;
  outbox: string;
}

export interface Mailer {
  /** Hands the message over; `name` names its .eml file when there is no SMTP server. */
  deliver(message: SendMailOptions, name: string): Promise<void>;
  close(): void;
}

/**
 * An SMTP conversation that stops answering ends after a minute of silence (nodemailer's
 * default is ten), so one stuck server delays the next e-mails by that much, not for ever.
 * A server that answers a byte at a time is never silent: the outbox's deadline ends that
 * one (message.signal, src/notify/outbox.ts).
 */
const SMTP_TIMEOUTS = { connectionTimeout: 30_000, greetingTimeout: 30_000, socketTimeout: 60_000 };

export function createMailer(options: MailOptions): Mailer {
  if (options.smtpUrl) {
    const transporter: Transporter = nodemailer.createTransport({ url: options.smtpUrl, ...SMTP_TIMEOUTS });
    return { deliver: async (message) => void (await transporter.sendMail(message)), close: () => transporter.close() };
  }
  const transporter = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async deliver(message, name) {
      const info = await transporter.sendMail(message);
      await fs.mkdir(options.outbox, { recursive: true });
      // Written beside and renamed, so that a reader never sees half a message.
      const file = path.join(options.outbox, `${name}.eml`);
      await fs.writeFile(`${file}.tmp`, info.message as Buffer);
      await fs.rename(`${file}.tmp`, file);
    },
    close: () => transporter.close(),
  };
}
