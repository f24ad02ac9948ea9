// `npm start` as a user runs it: the real process on an embedded PostgreSQL in a fresh data
// folder, the admin CLI beside it, a real SMTP receiver, and a day of tracking at TIME_SCALE.
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { SMTPServer } from 'smtp-server';

const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-e2e-'));
const port = 38000 + Math.floor(Math.random() * 1000);
const base = `http://127.0.0.1:${port}`;
const received: string[] = [];
let smtp: SMTPServer;
let smtpPort = 0;
let service: ChildProcess | null = null;

function env(): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  return { ...rest, DATA_DIR: dataDir, PORT: String(port), TIME_SCALE: '36000', SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, LOG_LEVEL: 'warn' };
}

async function startService(): Promise<void> {
  service = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env: env(), stdio: ['ignore', 'ignore', 'inherit'] });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('service did not become healthy');
}

async function stopService(): Promise<void> {
  if (!service) return;
  const exited = new Promise((resolve) => service!.once('exit', resolve));
  service.kill('SIGTERM');
  await exited;
  service = null;
}

async function admin(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', ...args], { cwd: root, env: env() });
  return JSON.parse(stdout);
}

async function api(method: string, url: string, key: string, body?: unknown) {
  const response = await fetch(`${base}/api/v1${url}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

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
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as { port: number }).port;
  await startService();
});

after(async () => {
  await stopService();
  await new Promise<void>((resolve) => smtp.close(resolve));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

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
  await stopService();
  await startService();
  const again = await api('GET', `/videos/${tracked.body.id}`, key);
  assert.equal(again.body.snapshots.length, 24);
  assert.equal((await api('GET', '/usage', key)).body.total_charged_usd, 0.36);
  await new Promise((r) => setTimeout(r, 1_000));
  assert.equal(received.length, 1);

  // A revoked key is refused at once by the running server.
  const { key_id: keyId } = (await admin('key', 'create', '--org', String(orgId), '--name', 'doomed')) as { key_id: string; api_key: string };
  const revoked = await admin('key', 'revoke', '--key', keyId);
  assert.deepEqual(revoked, { key_id: keyId, revoked: true });
});
