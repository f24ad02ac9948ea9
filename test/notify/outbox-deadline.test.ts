// The e-mail outbox against an SMTP server that never answers a message's end of data (so the
// send is never done, and a server trickling bytes would keep the socket from timing out): the
// sender gives the send up before its claim on the message runs out, so a second sender (another
// process) never sends the same message while the first is still talking, and the message is
// sent later, once.
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { migrate } from '../../src/db/migrate.ts';
import { withTransaction } from '../../src/db/pool.ts';
import { notifyMigrations } from '../../src/notify/completion-email.ts';
import { createMailer } from '../../src/notify/mailer.ts';
import { OutboxSender, recordMessages } from '../../src/notify/outbox.ts';
import { createTestDatabase } from '../support/db.ts';
import { quietPeriod, until, within } from '../support/wait.ts';

/** Short, so that the test takes seconds; the sender gives a send up at half of it. */
const CLAIM_MS = 4_000;
const MESSAGE_ID = '<stalled.completed@vidtrack>';

test('outbox: a send the SMTP server holds is given up before its claim runs out, and sent again later, never twice at once', async () => {
  /** Connections whose message the server holds unanswered, with the answer it owes. */
  const held = new Map<string, (error?: Error) => void>();
  const inFlight = new Set<string>();
  let mostInFlight = 0;
  let attemptsSeen = 0;
  const accepted: string[] = [];
  let firstHeld!: () => void;
  const firstHeldSeen = new Promise<void>((resolve) => (firstHeld = resolve));
  let firstClosed!: (at: number) => void;
  const firstClosedAt = new Promise<number>((resolve) => (firstClosed = resolve));
  let firstSession: string | null = null;
  let secondAtOnce!: () => void;
  const secondAtOnceSeen = new Promise<void>((resolve) => (secondAtOnce = resolve));

  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onMailFrom(_address, session, callback) {
      inFlight.add(session.id);
      mostInFlight = Math.max(mostInFlight, inFlight.size);
      if (inFlight.size > 1) secondAtOnce();
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        attemptsSeen += 1;
        if (attemptsSeen === 1) {
          // The first attempt gets no answer: the message is not accepted while it waits.
          firstSession = session.id;
          held.set(session.id, callback);
          firstHeld();
          return;
        }
        accepted.push(Buffer.concat(chunks).toString('utf8'));
        inFlight.delete(session.id);
        callback();
      });
    },
    onClose(session) {
      inFlight.delete(session.id);
      held.delete(session.id);
      if (session.id === firstSession) firstClosed(Date.now());
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;

  const db = await createTestDatabase();
  const errors: unknown[] = [];
  // Two senders with a mailer each: two processes of the service.
  const mailers = [0, 1].map(() => createMailer({ smtpUrl, from: 'vidtrack <no-reply@vidtrack.test>', outbox: path.join(os.tmpdir(), 'unused') }));
  const senders = mailers.map((mailer) => new OutboxSender(db.pool, mailer, (error) => errors.push(error), { claimMs: CLAIM_MS }));
  try {
    await migrate(db.pool, notifyMigrations);
    await withTransaction(db.pool, (client) =>
      recordMessages(client, [{ messageId: MESSAGE_ID, fileName: 'stalled-completed', message: { from: 'vidtrack <no-reply@vidtrack.test>', to: 'owner@acme.test', subject: 'Tracking completed', text: 'Hello' } }]),
    );
    senders[0]!.kick();
    await within('the SMTP server to hold the first attempt', firstHeldSeen, 10_000);
    // The other sender finds the message claimed, and looks again when the claim runs out.
    senders[1]!.kick();
    const { rows } = await db.pool.query<{ claimed_until: Date; attempts: number }>(`SELECT next_attempt_at AS claimed_until, attempts FROM notify.outbox`);
    const claimedUntil = rows[0]!.claimed_until.getTime();
    assert.equal(rows[0]!.attempts, 1);

    const duplicate = secondAtOnceSeen.then(() => Promise.reject(new Error('a second send of the message started while the first was in flight')));
    // Once the race is over, the count of sends in flight below reports a later one.
    duplicate.catch(() => undefined);
    const closedAt = await within('the first send to be given up (its SMTP connection closed)', Promise.race([firstClosedAt, duplicate]), CLAIM_MS + 2_000);
    // PostgreSQL's now() and Date.now() read the same clock here.
    assert.ok(closedAt <= claimedUntil - CLAIM_MS / 4, `given up ${claimedUntil - closedAt} ms before the claim ran out, not a clear margin`);

    const row = await until(
      'the outbox to mark the message sent after a retry',
      async () => (await db.pool.query<{ attempts: number }>(`SELECT attempts FROM notify.outbox WHERE sent_at IS NOT NULL`)).rows[0],
      15_000,
    );
    assert.equal(row.attempts, 2);
    // Past the first claim's end, when the second sender looks again: nothing more may go.
    await quietPeriod(Math.max(0, claimedUntil + 500 - Date.now()));
    assert.equal(mostInFlight, 1, 'two sends of the message were in flight at once');
    assert.equal(accepted.length, 1, `the server accepted ${accepted.length} copies`);
    assert.match(accepted[0]!, new RegExp(`^Message-ID: ${MESSAGE_ID}`, 'mi'));
    assert.equal(attemptsSeen, 2);
    assert.equal(errors.length, 1, errors.map(String).join('; '));
    assert.match(String(errors[0]), /send abandoned after \d+ ms, before the claim on it runs out/);
  } finally {
    // A held answer is owed still only when the send was not given up (the bug): refuse it.
    for (const answer of held.values()) answer(Object.assign(new Error('held by the test'), { responseCode: 451 }));
    await Promise.all(senders.map((sender) => sender.stop(5_000)));
    for (const mailer of mailers) mailer.close();
    await db.drop();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  }
});
