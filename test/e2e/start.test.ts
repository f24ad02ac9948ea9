// `npm start` as a user runs it: the real process on an embedded PostgreSQL in a fresh data
// folder, the admin CLI beside it, a real SMTP receiver, and a day of tracking at TIME_SCALE.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SMTPServer } from 'smtp-server';
import { serviceProcess, type ServiceProcess } from '../support/process.ts';
import { quietPeriod, until } from '../support/wait.ts';

const received: string[] = [];
let smtp: SMTPServer | undefined;
let service: ServiceProcess | undefined;

before(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, _session, callback) {
      let text = '';
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', () => {
        received.push(text);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp!.listen(0, '127.0.0.1', resolve));
  const smtpPort = (smtp.server.address() as { port: number }).port;
  service = serviceProcess({ TIME_SCALE: '36000', SMTP_URL: `smtp://127.0.0.1:${smtpPort}` });
  await service.start();
});

after(async () => {
  // Both, even when one fails; the service's cleanup also stops its embedded PostgreSQL.
  try {
    await service?.cleanup();
  } finally {
    if (smtp) await new Promise<void>((resolve) => smtp!.close(resolve));
  }
});

const admin = (...args: string[]) => service!.admin(...args);
const api = (method: string, url: string, key: string, body?: unknown) => service!.api(method, url, key, body);

test('a day of tracking through npm start, the admin CLI and SMTP, surviving a restart', async () => {
  const { org_id: orgId } = await admin('org', 'create', '--name', 'Acme', '--email', 'ops@acme.test', '--plan', 'pro');
  const { api_key: key } = (await admin('key', 'create', '--org', String(orgId), '--name', 'e2e')) as { api_key: string };
  assert.match(key, /^vt_live_/);
  assert.deepEqual(await admin('deposit', '--org', String(orgId), '--amount', '1'), { org_id: orgId, balance_usd: 1 });

  const tracked = await api('POST', '/videos/track', key, { video_link: 'https://youtu.be/dQw4w9WgXcQ', duration_days: 1 });
  assert.equal(tracked.status, 201, JSON.stringify(tracked.body));
  assert.equal(tracked.body.estimated_cost, 0.36);

  const done = await until('completion', async () => {
    const got = await api('GET', `/videos/${tracked.body.id}`, key);
    return got.body.status === 'completed' ? got.body : undefined;
  });
  assert.equal(done.snapshots.length, 24);
  assert.equal(done.days_remaining, 0);
  const usage = await until('the charge', async () => {
    const u = await api('GET', '/usage', key);
    return u.body.uncharged_usage_usd === 0 ? u.body : undefined;
  });
  assert.equal(usage.total_charged_usd, 0.36);
  assert.equal(usage.balance_usd, 0.64);
  assert.equal(usage.total_snapshots, 24);
  await until('the e-mail', async () => (received.length > 0 ? true : undefined));
  assert.equal(received.length, 1);
  assert.match(received[0]!, /To: ops@acme\.test/);

  // A restart loses nothing and sends nothing twice.
  await service!.stop();
  await service!.start();
  const again = await api('GET', `/videos/${tracked.body.id}`, key);
  assert.equal(again.body.snapshots.length, 24);
  assert.equal((await api('GET', '/usage', key)).body.total_charged_usd, 0.36);
  // Not a synchronization: nothing signals "decided not to send again", so give a resent
  // e-mail a second (hundreds of rounds at this TIME_SCALE) to show up.
  await quietPeriod(1_000);
  assert.equal(received.length, 1);

  // A revoked key is refused at once by the running server.
  const { key_id: keyId } = (await admin('key', 'create', '--org', String(orgId), '--name', 'doomed')) as { key_id: string; api_key: string };
  const revoked = await admin('key', 'revoke', '--key', keyId);
  assert.deepEqual(revoked, { key_id: keyId, revoked: true });
});
