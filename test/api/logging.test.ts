// The API logs pino JSON lines, each with its request's id, and never an API key.
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';

const lines: string[] = [];
let service: TestService;
before(async () => {
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  service = await startTestService({ logStream: stream });
});
after(() => service.close());

test('JSON log lines with request ids and no key', async () => {
  const org = await service.organization({ usd: '1' });
  await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
  await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': 'vt_live_not-a-real-key-0123456789' } });
  await service.app.inject({ method: 'POST', url: '/api/v1/videos/track', headers: { 'x-api-key': org.liveKey }, payload: '{bad json' });
  await new Promise((r) => setImmediate(r));
  assert.ok(lines.length >= 6, `${lines.length} lines`);
  const records = lines.map((line) => JSON.parse(line) as { reqId?: string; level: number });
  assert.ok(records.every((r) => typeof r.reqId === 'string' && r.reqId.length > 0), 'every line names its request');
  assert.equal(new Set(records.map((r) => r.reqId)).size, 3);
  assert.ok(!lines.some((line) => line.includes('vt_live_') || line.includes('vt_test_')), 'no key in the logs');
});

test('an invitation token in a URL is not logged', async () => {
  const token = 'inv-token-that-sets-a-password-0123456789';
  const from = lines.length;
  await service.app.inject({ url: `/invite/${token}` });
  await service.app.inject({ method: 'POST', url: `/invite/${token}?x=1`, payload: { password: 'whatever-long-enough' } });
  await new Promise((r) => setImmediate(r));
  const logged = lines.slice(from);
  const urls = logged.map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url).filter(Boolean);
  assert.deepEqual(urls, ['/invite/[redacted]', '/invite/[redacted]?x=1']);
  assert.ok(!logged.some((line) => line.includes(token)), 'the token is in the log');
});
