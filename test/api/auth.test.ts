// Authentication: spec §5 (401 API key required for a missing, invalid or deleted key; a key
// acts for its organization only) and DESIGN §8 (keys revoked through the admin commands).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { issueKey, revokeKey } from '../../src/commands/account-commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { until } from '../support/wait.ts';
import { API, client, expectError, expectStatus, freshAddress, newLink, tracked } from './helpers.ts';

/** A client from an address of its own (failed authentications are limited per address). */
const anonymous = (key?: string) => client(service, key, { remoteAddress: freshAddress() });

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

/** One call to every endpoint, as `api` sends it. */
function everyEndpoint(api: ReturnType<typeof client>, id: string) {
  return [
    () => api.track(newLink(), 1),
    () => api.list(),
    () => api.video(id),
    () => api.stop(id),
    () => api.usage(),
  ];
}

/**
 * A revocation reaches the API's key cache by a NOTIFY on its own connection, which lands a
 * few milliseconds after the read model commits (after service.settle()). Allow that much, no more.
 */
async function revokedWithin(api: ReturnType<typeof client>, ms = 1_000): Promise<void> {
  const deadline = performance.now() + ms;
  while ((await api.usage()).statusCode !== 401) {
    assert.ok(performance.now() < deadline, `the key still works ${ms} ms after its revocation was projected`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function expectAll401(api: ReturnType<typeof client>, id = randomUUID()) {
  for (const call of everyEndpoint(api, id)) {
    const response = await call();
    assert.deepEqual(expectError(response, 401, 'API key required'), { error: 'API key required' }, response.body);
  }
}

describe('401 API key required', () => {
  test('no key', async () => {
    await expectAll401(anonymous());
  });

  test('malformed keys', async () => {
    const org = await service.organization({ usd: '10' });
    const malformed = [
      '',
      ' ',
      'abc',
      'vt_live_',
      'vt_live_short',
      'vt_prod_' + 'a'.repeat(32),
      'VT_LIVE_' + org.liveKey.slice(8),
      `Bearer ${org.liveKey}`,
      `${org.liveKey}x`,
      org.liveKey.slice(0, -1),
      'vt_live_' + 'a'.repeat(500),
      'vt_live_' + '../../etc/passwd',
    ];
    for (const key of malformed) await expectAll401(anonymous(key));
  });

  test('well-formed but unknown keys', async () => {
    const org = await service.organization({ usd: '10' });
    await expectAll401(anonymous(`vt_live_${randomBytes(24).toString('base64url')}`));
    await expectAll401(anonymous(`vt_test_${randomBytes(24).toString('base64url')}`));
    // the right secret under the other mode's prefix is another key
    await expectAll401(anonymous(org.liveKey.replace('vt_live_', 'vt_test_')));
    await expectAll401(anonymous(org.testKey.replace('vt_test_', 'vt_live_')));
  });

  test('the key belongs in X-API-Key, not elsewhere', async () => {
    const org = await service.organization({ usd: '10' });
    for (const headers of [{ authorization: `Bearer ${org.liveKey}` }, { 'x-api-token': org.liveKey }, { 'api-key': org.liveKey }]) {
      const response = await service.app.inject({ method: 'GET', url: `${API}/usage`, headers });
      expectError(response, 401, 'API key required');
    }
    expectError(await service.app.inject({ method: 'GET', url: `${API}/usage?api_key=${org.liveKey}` }), 401, 'API key required');
    // header names are case-insensitive
    expectStatus(await service.app.inject({ method: 'GET', url: `${API}/usage`, headers: { 'X-API-KEY': org.liveKey } }), 200);
  });

  test('a revoked key stops working at once, for every endpoint; the others keep working', async () => {
    const org = await service.organization({ usd: '10' });
    const api = client(service, org.liveKey);
    const created = await tracked(api, newLink(), 1);
    expectStatus(await api.usage(), 200); // cached as valid
    const handled = await revokeKey(service.store, service.clock, org.orgId, org.liveKeyId);
    assert.ok(handled.position);
    await service.settle();
    await revokedWithin(api);
    await expectAll401(api, created.id);
    expectStatus(await client(service, org.testKey).usage(), 200);
  });

  test('a revoked test key stops working too', async () => {
    const org = await service.organization({ usd: '10' });
    const api = client(service, org.testKey);
    await tracked(api, newLink(), 1);
    await revokeKey(service.store, service.clock, org.orgId, org.testKeyId);
    await service.settle();
    await revokedWithin(api);
    await expectAll401(api);
    expectStatus(await client(service, org.liveKey).usage(), 200);
  });

  test('a key issued a moment ago works at once', async () => {
    const org = await service.organization({ usd: '10' });
    const issued = await issueKey(service.store, service.clock, { orgId: org.orgId, name: 'second', mode: 'live' });
    await service.settle();
    expectStatus(await client(service, issued.apiKey).usage(), 200);
  });

  test('401 comes before body validation, and before 404', async () => {
    const noKey = anonymous();
    expectError(await noKey.post('/videos/track', '{not json', { 'content-type': 'application/json' }), 401, 'API key required');
    expectError(await noKey.track('not a link', 99), 401, 'API key required');
    expectError(await noKey.list('platform=vimeo&limit=0'), 401, 'API key required');
    expectError(await noKey.video('no-such-video'), 401, 'API key required');
    expectError(await noKey.get('/no-such-path'), 401, 'API key required');
    // URLs the router refuses (answered before any hook) too, with no key and with a wrong one.
    for (const path of ['/videos/%E0%A4%A', `/videos/${'x'.repeat(5_000)}`]) {
      expectError(await noKey.get(path), 401, 'API key required');
      expectError(await anonymous('vt_live_0000000000000000000000').get(path), 401, 'API key required');
    }
  });
});

describe('a key acts for its organization only', () => {
  test("another organization's videos: 403 on get and stop, absent from the list", async () => {
    const a = await service.organization({ usd: '10' });
    const b = await service.organization({ usd: '10' });
    const aApi = client(service, a.liveKey);
    const bApi = client(service, b.liveKey);
    const video = await tracked(aApi, newLink(), 1);
    expectError(await bApi.video(video.id), 403, 'Access denied');
    expectError(await bApi.stop(video.id), 403, 'Access denied');
    assert.equal(expectStatus(await bApi.list(), 200).total, 0);
    assert.equal(expectStatus(await aApi.video(video.id), 200).status, 'monitoring');
  });

  test('several keys of one organization share its videos and usage', async () => {
    const org = await service.organization({ usd: '10' });
    const second = await issueKey(service.store, service.clock, { orgId: org.orgId, name: 'ci', mode: 'live' });
    await service.settle();
    const first = client(service, org.liveKey);
    const other = client(service, second.apiKey);
    const video = await tracked(first, newLink(), 1);
    assert.equal(expectStatus(await other.video(video.id), 200).id, video.id);
    assert.deepEqual(expectStatus(await other.usage(), 200), expectStatus(await first.usage(), 200));
    expectError(await other.track(video.video_link, 1), 409, 'Video is already being tracked');
    expectStatus(await other.stop(video.id), 200);
  });
});

describe('per-key request count (spec §5.3)', () => {
  test('every request a key makes counts once: routes, unknown paths, URLs the router refuses', async () => {
    const org = await service.organization();
    const api = client(service, org.liveKey);
    const answers = [await api.usage(), await api.get('/no-such-path'), await service.app.inject({ method: 'DELETE', url: `${API}/usage`, headers: { 'x-api-key': org.liveKey } }), await api.get('/videos/%E0%A4%A')];
    assert.deepEqual(answers.map((r) => r.statusCode), [200, 404, 404, 400]);
    // The counts reach the table every few seconds; all were counted before the first look,
    // so the count never goes above what was sent unless something counted twice.
    const counted = await until('the key usage to reach the table', async () => {
      const { rows } = await service.db.pool.query('SELECT requests::int FROM dashboard.key_usage WHERE key_id = $1', [org.liveKeyId]);
      const requests = rows[0]?.requests as number | undefined;
      return requests !== undefined && requests >= answers.length ? requests : undefined;
    }, 15_000);
    assert.equal(counted, answers.length);
  });
});

describe('public routes', () => {
  test('health and the OpenAPI document need no key', async () => {
    expectStatus(await service.app.inject({ method: 'GET', url: '/health' }), 200);
    expectStatus(await service.app.inject({ method: 'GET', url: `${API}/health` }), 200);
    expectStatus(await service.app.inject({ method: 'GET', url: `${API}/openapi.json` }), 200);
  });
});
