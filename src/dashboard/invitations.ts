// The invitation e-mail, through the same transport as the completion e-mail (SMTP_URL, or an
// .eml file in the data folder). It is sent after the invitation is in the log, with no
// transaction open; whoever invited also gets the link (the CLI prints it, the dashboard shows
// it), so a lost e-mail loses nothing.
import type { MailOptions } from '../notify/mailer.ts';
import { createMailer } from '../notify/mailer.ts';

export function inviteUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/invite/${token}`;
}

export async function sendInvitation(mail: MailOptions, input: { memberId: string; email: string; orgName: string; url: string }): Promise<void> {
  const mailer = createMailer(mail);
  try {
    await mailer.deliver(
      {
        from: mail.from,
        to: input.email,
        subject: `You are invited to ${input.orgName} on vidtrack`,
        text: `You were invited to the vidtrack dashboard of ${input.orgName}.\n\nSet your password here (the link works once, for 7 days):\n${input.url}\n`,
      },
      `invite-${input.memberId}`,
    );
  } finally {
    mailer.close();
  }
}
