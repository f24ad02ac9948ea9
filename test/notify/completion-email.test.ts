// The completion e-mail reactor against a real SMTP server (smtp-server on a free port),
// and its .eml files when no SMTP server is configured.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue, completeEnded } from '../../src/collect/work.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { streamIdOfVideo } from '../../src/domain/video.ts';
import { CompletionEmails, type MailOptions } from '../../src/notify/completion-email.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { collectHours, track, youtubeLink } from '../collect/rounds.ts';

interface Received {
  from: string;
  to: string[];
  raw: string;
}

let smtp: SMTPServer;
let smtpUrl: string;
const received: Received[] = [];
/** While set, the server refuses every message (an SMTP server in trouble). */
let refuse = false;
/** While set, the server holds each message's DATA phase until `release` is called (a slow server). */
let slow: { dataStarted: () => void; released: Promise<void> } | null = null;

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', async () => {
        if (slow) {
          slow.dataStarted();
          await slow.released;
        }
        if (refuse) return callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 451 }));
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpUrl = `smtp://127.0.0.1:${(smtp.server.address() as { port: number }).port}`;
});
after(() => new Promise<void>((resolve) => smtp.close(() => resolve())));

let service: TestService;
const reactors: CompletionEmails[] = [];
let errors: unknown[] = [];
beforeEach(async () => {
  received.length = 0;
  refuse = false;
  slow = null;
  errors = [];
  service = await startTestService();
});
afterEach(async () => {
  for (const reactor of reactors.splice(0)) await reactor.stop();
  await service.close();
});

async function startEmails(mail: Partial<MailOptions> = {}): Promise<CompletionEmails> {
  const reactor = new CompletionEmails(service.store, service.db.pool, service.watcher, {
    from: 'vidtrack <no-reply@vidtrack.test>',
    outbox: path.join(os.tmpdir(), 'unused'),
    ...mail,
  });
  await reactor.start((error) => errors.push(error));
  reactors.push(reactor);
  return reactor;
}

async function eventually(what: string, probe: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; reactor errors: ${errors.map(String).join('; ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A deposit appended to the log; its position, for read-your-writes. */
async function depositNow(orgId: string, usd: string) {
  const handled = await deposit(service.store, service.clock, orgId, parseUsd(usd)!, 'while SMTP is slow');
  return handled.position;
}

/** Waits long enough for a wrongly sent message to have arrived. */
const quietly = () => new Promise((r) => setTimeout(r, 1_000));

/** Videos whose completion e-mail the outbox has marked sent. */
async function sentRows(): Promise<string[]> {
  const { rows } = await service.db.pool.query(`SELECT message_id FROM notify.outbox WHERE sent_at IS NOT NULL ORDER BY message_id`);
  return rows.map((r) => /^<(.+)\.completed@vidtrack>$/.exec(r.message_id)![1]!);
}

/** Runs a 1-day period to its end: hourly collection, then the completion round. */
async function runOneDay(): Promise<void> {
  await collectHours(service, 24, async () => {
    await collectDue(service.work);
    await completeEnded(service.work);
  });
}

describe('completion e-mail over SMTP', () => {
  it('sends exactly one e-mail to the organization for a naturally completed video, none for a stopped one', async () => {
    await startEmails({ smtpUrl });
    const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
    const link = youtubeLink();
    const completed = await track(service, org.liveKey, link);
    const stopped = await track(service, org.liveKey, youtubeLink());
    const stop = await service.app.inject({ method: 'POST', url: `/api/v1/videos/${stopped}/stop`, headers: { 'x-api-key': org.liveKey } });
    assert.equal(stop.statusCode, 200, stop.body);

    await runOneDay();
    await eventually('the e-mail', () => received.length >= 1);
    await quietly();

    assert.equal(received.length, 1, `messages: ${received.map((m) => m.to).join(' | ')}`);
    const [mail] = received;
    assert.deepEqual(mail!.to, ['owner@acme.test']);
    assert.equal(mail!.from, 'no-reply@vidtrack.test');
    assert.match(mail!.raw, /^To: owner@acme\.test/m);
    assert.match(mail!.raw, /^Subject: Tracking completed/m);
    const body = mail!.raw.replace(/=\r?\n/g, ''); // undo quoted-printable soft line breaks
    assert.ok(body.includes(link), `the link ${link} is not in:\n${mail!.raw}`);
    assert.ok(body.includes(completed));
    assert.ok(!body.includes(stopped));
    assert.deepEqual(await sentRows(), [completed]);
    assert.deepEqual(errors, []);
  });

  it('a completion whose video the read models never got is said and passed, and the e-mails after it still go', async () => {
    await startEmails({ smtpUrl });
    const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
    const completed = await track(service, org.liveKey, youtubeLink());
    // A completion the read models pass without a row to show for it, as after a parked VideoTracked.
    await service.store.append(streamIdOfVideo('never-projected'), [
      { type: 'VideoCompleted', data: { videoId: 'never-projected', orgId: org.orgId, mode: 'live', at: service.clock.now().toISOString(), previousStatus: 'monitoring', reason: 'period_ended' } },
    ], 'any');

    await runOneDay();
    await eventually('the e-mail of the video completed after it', () => received.length >= 1);
    // Marked sent once the SMTP server has taken it, a moment after it arrives there.
    await eventually('its outbox row marked sent', async () => (await sentRows()).length >= 1);
    assert.deepEqual(await sentRows(), [completed]);
    assert.equal(errors.length, 1, errors.map(String).join('; '));
    assert.match(String(errors[0]), /no completion e-mail for video never-projected/);
  });

  it('a restart sends nothing twice', async () => {
    const first = await startEmails({ smtpUrl });
    const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
    const early = await track(service, org.liveKey, youtubeLink());
    service.clock.advance(HOUR_MS);
    const late = await track(service, org.liveKey, youtubeLink());
    service.clock.advance(-HOUR_MS);
    await runOneDay(); // `early` completes
    await eventually('the first e-mail', () => received.length === 1);

    await first.stop();
    await startEmails({ smtpUrl });
    await quietly();
    assert.equal(received.length, 1, 'the restart sent the first e-mail again');

    // Stopped while `late` completes: the next start picks it up, once.
    const second = reactors.at(-1)!;
    await second.stop();
    await collectHours(service, 1, async () => {
      await collectDue(service.work);
      await completeEnded(service.work);
    });
    await quietly();
    assert.equal(received.length, 1, 'a stopped reactor sent an e-mail');
    await startEmails({ smtpUrl });
    await startEmails({ smtpUrl }); // two at once (two processes) still send it once
    await eventually('the second e-mail', () => received.length >= 2);
    await quietly();
    assert.equal(received.length, 2);
    assert.deepEqual((await sentRows()).sort(), [early, late].sort());
  });

  it('a reactor started after the fact catches up from the log', async () => {
    const org = await service.organization({ usd: '5', email: 'late@acme.test' });
    const id = await track(service, org.liveKey, youtubeLink());
    await runOneDay();
    await startEmails({ smtpUrl });
    await eventually('the e-mail', () => received.length === 1);
    assert.deepEqual(received[0]!.to, ['late@acme.test']);
    await eventually('its outbox row marked sent', async () => (await sentRows()).length === 1);
    assert.deepEqual(await sentRows(), [id]);
  });

  it('sends none for cancelled or errored videos, one each for paused videos whose period ends', async () => {
    await startEmails({ smtpUrl });
    const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
    const cancelled = await track(service, org.liveKey, youtubeLink());
    const deleted = await track(service, org.liveKey, youtubeLink('410'));
    await cancelVideo(service.store, service.clock, cancelled);
    // 0.5 USD pays for 33 snapshots: both videos of this organization pause in hours 16 and 17.
    const poor = await service.organization({ usd: '0.5', email: 'poor@acme.test' });
    const paused = [await track(service, poor.liveKey, youtubeLink()), await track(service, poor.liveKey, youtubeLink())];
    await service.settle();
    await runOneDay();
    const { rows } = await service.db.pool.query(`SELECT video_id, status FROM rm.videos ORDER BY video_id`);
    assert.deepEqual(
      Object.fromEntries(rows.map((r) => [r.video_id, r.status])),
      { [cancelled]: 'cancelled', [deleted]: 'error', [paused[0]!]: 'completed', [paused[1]!]: 'completed' },
    );
    assert.equal((await service.db.pool.query(`SELECT 1 FROM es.events WHERE type = 'VideoPaused'`)).rowCount, 2);
    await eventually('the e-mails', () => received.length >= 2);
    await quietly();
    assert.equal(received.length, 2);
    assert.ok(received.every((m) => m.to.length === 1 && m.to[0] === 'poor@acme.test'));
    assert.deepEqual((await sentRows()).sort(), [...paused].sort());
  });

  it('a slow SMTP server stalls no reader of the log: a deposit made while it holds the message is projected at once', async () => {
    let dataStarted!: () => void;
    const started = new Promise<void>((resolve) => (dataStarted = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // Released by the test, or by itself after 20 s so that a failing run does not hang.
    const selfRelease = setTimeout(release, 20_000);
    slow = { dataStarted, released };
    try {
      await startEmails({ smtpUrl });
      const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
      const id = await track(service, org.liveKey, youtubeLink());
      await runOneDay();
      await within(10_000, 'the SMTP server to receive the message', started);

      // The server holds the DATA phase: the reactor is mid-send. A deposit now must still be
      // projected, and answered by the API, well before the server lets go.
      const deposit = await depositNow(org.orgId, '1');
      assert.ok(await service.watcher.waitFor(deposit, 5_000), 'the read models did not pass a deposit made while the SMTP server was slow');
      const usage = await service.app.inject({ method: 'GET', url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
      assert.equal(usage.statusCode, 200, usage.body);
      assert.equal(received.length, 0, 'the server has not accepted the message yet');

      release();
      await eventually('the e-mail', () => received.length === 1);
      await eventually('the outbox to mark it sent', async () => (await sentRows()).length === 1);
      assert.deepEqual(await sentRows(), [id]);
      assert.match(received[0]!.raw, new RegExp(`^Message-ID: <${id}\\.completed@vidtrack>`, 'mi'));
    } finally {
      clearTimeout(selfRelease);
      release();
    }
  });

  it('an SMTP server that refuses loses no e-mail: it is sent once it accepts again', async () => {
    refuse = true;
    await startEmails({ smtpUrl });
    const org = await service.organization({ usd: '5', email: 'owner@acme.test' });
    const id = await track(service, org.liveKey, youtubeLink());
    await runOneDay();
    await eventually('the reactor to report the refusal', () => errors.length > 0);
    assert.deepEqual(await sentRows(), []);
    refuse = false;
    await eventually('the e-mail after the retry', () => received.length === 1, 15_000);
    await eventually('its outbox row marked sent', async () => (await sentRows()).length === 1);
    assert.deepEqual(await sentRows(), [id]);
  });
});

describe('completion e-mail without SMTP', () => {
  let outbox: string;
  beforeEach(() => {
    outbox = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-outbox-'));
  });
  afterEach(() => fs.rmSync(outbox, { recursive: true, force: true }));

  it('writes an .eml file to the outbox folder', async () => {
    await startEmails({ outbox: path.join(outbox, 'mail') });
    const org = await service.organization({ usd: '5', email: 'files@acme.test' });
    const link = youtubeLink();
    const id = await track(service, org.liveKey, link);
    await runOneDay();
    const file = path.join(outbox, 'mail', `${id}-completed.eml`);
    await eventually('the .eml file', () => fs.existsSync(file));
    const text = fs.readFileSync(file, 'utf8').replace(/=\n/g, '');
    assert.match(text, /^To: files@acme\.test$/m);
    assert.match(text, /^From: vidtrack <no-reply@vidtrack\.test>$/m);
    assert.ok(text.includes(link));
    assert.deepEqual(fs.readdirSync(path.join(outbox, 'mail')), [`${id}-completed.eml`]);
    assert.equal(received.length, 0);
  });
});
