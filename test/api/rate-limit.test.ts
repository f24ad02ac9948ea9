// Rate limits: spec §5.8, §7 (429) and §8 (headers, plans), DESIGN §8 (per key; failed
// authentications limited per client address).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { after, before, describe, test } from 'node:test';
import { issueKey } from '../../src/commands/account-commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectStatus, freshAddress, newLink, tracked, type Client, type Response } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

const nowSeconds = () => Date.now() / 1000;

/** The three headers, as numbers, checked for shape. */
function rateHeaders(response: Response) {
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    assert.ok(response.headers[name] !== undefined, `${name} missing on a ${response.statusCode}: ${JSON.stringify(response.headers)}`);
    assert.match(String(response.headers[name]), /^\d+$/, `${name}: ${String(response.headers[name])}`);
  }
  const limit = Number(response.headers['x-ratelimit-limit']);
  const remaining = Number(response.headers['x-ratelimit-remaining']);
  const reset = Number(response.headers['x-ratelimit-reset']);
  // a Unix time in seconds, at most a minute ahead
  assert.ok(reset >= Math.floor(nowSeconds()) && reset <= Math.ceil(nowSeconds()) + 61, `X-RateLimit-Reset ${reset} is not within a minute of now`);
  return { limit, remaining, reset };
}

/** Sends `n` cheap requests and returns them. */
async function burst(api: Client, n: number): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < n; i++) responses.push(await api.usage());
  return responses;
}

function expect429(response: Response, limit: number) {
  const body = expectError(response, 429, 'Rate limit exceeded');
  assert.deepEqual(Object.keys(body).sort(), ['error', 'limit', 'reset']);
  assert.equal(body.limit, limit);
  assert.ok(Number.isInteger(body.limit));
  assert.ok(Number.isInteger(body.reset), `reset ${String(body.reset)} is an integer`);
  const reset = body.reset as number;
  assert.ok(reset > nowSeconds() && reset <= Math.ceil(nowSeconds()) + 61, `reset ${reset} is a Unix time within a minute`);
  const headers = rateHeaders(response);
  assert.equal(headers.limit, limit);
  assert.equal(headers.remaining, 0);
  assert.equal(headers.reset, reset, 'X-RateLimit-Reset and the body\'s reset are one time');
  return body;
}

describe('headers', () => {
  test('X-RateLimit-Limit, -Remaining and -Reset on every kind of response', async () => {
    const org = await service.organization({ usd: '1', plan: 'pro' });
    const api = client(service, org.liveKey);
    const created = await api.track(newLink(), 1);
    const id = created.json().id;
    const responses: Array<[string, Response]> = [
      ['201 track', created],
      ['200 list', await api.list()],
      ['200 get', await api.video(id)],
      ['200 usage', await api.usage()],
      ['400 invalid', await api.track('nope', 1)],
      ['400 platform', await api.list('platform=vimeo')],
      ['402', await api.track(newLink(), 30)],
      ['404 track', await api.track(newLink('youtube', '404'), 1)],
      ['404 get', await api.video(randomUUID())],
      ['409', await api.track(created.json().video_link, 1)],
      ['500 track', await api.track(newLink('youtube', '500'), 1)],
      ['502 track', await api.track(newLink('youtube', '503'), 1)],
      ['200 stop', await api.stop(id)],
      ['400 stop', await api.stop(id)],
    ];
    let previous = Infinity;
    for (const [what, response] of responses) {
      assert.ok(response.statusCode < 600, what);
      const { limit, remaining } = rateHeaders(response);
      assert.equal(limit, 300, what);
      assert.ok(remaining < previous, `${what}: remaining goes down (${remaining} after ${previous})`);
      previous = remaining;
    }
    assert.equal(previous, 300 - responses.length);
  });

  test('on every 400 a request with a valid key can get: bad JSON, wrong media type, bad query, unknown route, bad URL', async () => {
    const org = await service.organization({ plan: 'pro' });
    const key = { 'x-api-key': org.liveKey };
    const inject = (options: InjectOptions) => service.app.inject(options);
    const responses: Array<[string, Response]> = [
      ['invalid JSON', await inject({ method: 'POST', url: '/api/v1/videos/track', headers: { ...key, 'content-type': 'application/json' }, payload: '{"video_link":' })],
      ['wrong media type', await inject({ method: 'POST', url: '/api/v1/videos/track', headers: { ...key, 'content-type': 'text/plain' }, payload: 'hello' })],
      ['body too large', await inject({ method: 'POST', url: '/api/v1/videos/track', headers: { ...key, 'content-type': 'application/json' }, payload: `{"video_link":"${'a'.repeat(2 ** 21)}"}` })],
      ['bad limit', await inject({ method: 'GET', url: '/api/v1/videos?limit=abc', headers: key })],
      ['bad status', await inject({ method: 'GET', url: '/api/v1/videos?status=zzz', headers: key })],
      ['bad percent-encoding', await inject({ method: 'GET', url: '/api/v1/videos/%E0%A4%A', headers: key })],
      ['overlong id', await inject({ method: 'GET', url: `/api/v1/videos/${'x'.repeat(5000)}`, headers: key })],
      ['unknown route', await inject({ method: 'GET', url: '/api/v1/nothing-here', headers: key })],
      ['unknown method', await inject({ method: 'DELETE', url: '/api/v1/usage', headers: key })],
    ];
    const without = responses.filter(([, response]) => response.headers['x-ratelimit-limit'] === undefined).map(([what, r]) => `${what} (${r.statusCode})`);
    assert.deepEqual(without, [], 'answers without X-RateLimit-* headers');
    for (const [what, response] of responses) {
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${what}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      assert.equal(rateHeaders(response).limit, 300, what);
    }
  });

  test('also on a 401, counted against the client address', async () => {
    const response = await client(service, 'vt_live_nope', { remoteAddress: freshAddress() }).usage();
    expectError(response, 401, 'API key required');
    const { limit, remaining } = rateHeaders(response);
    assert.equal(remaining, limit - 1);
  });

  test('403 responses carry them too', async () => {
    const a = await service.organization({ usd: '1' });
    const b = await service.organization({ usd: '1' });
    const video = await tracked(client(service, a.liveKey), newLink(), 1);
    const response = await client(service, b.liveKey).video(video.id);
    expectError(response, 403, 'Access denied');
    rateHeaders(response);
  });
});

describe('plans', () => {
  test('free: 60 per minute, the 61st is 429 with limit 60 and an integer reset', async () => {
    const org = await service.organization({ plan: 'free', usd: '1' });
    const api = client(service, org.liveKey);
    const responses = await burst(api, 60);
    responses.forEach((r, i) => {
      assert.equal(r.statusCode, 200, `request ${i + 1}: ${r.body}`);
      const { limit, remaining } = rateHeaders(r);
      assert.equal(limit, 60);
      assert.equal(remaining, 59 - i);
    });
    expect429(await api.usage(), 60);
    // every endpoint is refused now, before anything else is looked at
    expect429(await api.track(newLink(), 1), 60);
    expect429(await api.track('garbage', 0), 60);
    expect429(await api.list('platform=vimeo'), 60);
    expect429(await api.video(randomUUID()), 60);
    expect429(await api.stop(randomUUID()), 60);
    assert.equal(expectStatus(await client(service, org.testKey).list(), 200).total, 0, 'the refused track created nothing');
  });

  test('pro: 300 per minute', async () => {
    const org = await service.organization({ plan: 'pro', usd: '1' });
    const api = client(service, org.liveKey);
    const responses = await burst(api, 300);
    assert.ok(responses.every((r) => r.statusCode === 200));
    assert.equal(rateHeaders(responses[0]!).limit, 300);
    assert.equal(rateHeaders(responses[299]!).remaining, 0);
    expect429(await api.usage(), 300);
  });

  test('enterprise: the custom limit of the organization', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: 7, usd: '1' });
    const api = client(service, org.liveKey);
    const responses = await burst(api, 7);
    assert.ok(responses.every((r) => r.statusCode === 200));
    assert.equal(rateHeaders(responses[0]!).limit, 7);
    expect429(await api.usage(), 7);
  });

  test('enterprise with a limit above the pro plan', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: 2000, usd: '1' });
    const response = await client(service, org.liveKey).usage();
    assert.equal(rateHeaders(response).limit, 2000);
  });
});

describe('the reset time', () => {
  test('is never before the window resets, and the 429 body says the same', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: 1, usd: '1' });
    const api = client(service, org.liveKey);
    // The window opens at the key's first request: somewhere between these two instants.
    const before = Date.now();
    const first = await api.usage();
    const after = Date.now();
    expectStatus(first, 200);
    const reset = (response: Response) => Number(response.headers['x-ratelimit-reset']);
    const inTime = (seconds: number, what: string) =>
      assert.ok(seconds * 1000 >= before + 60_000 && seconds * 1000 < after + 61_000, `${what}: ${seconds} s for a window of ${before}..${after} + 60 s`);
    inTime(reset(first), 'the first request');
    // A rounding that depends on the instant of the request shows within any second: 429s for one.
    let refused = 0;
    for (const until = Date.now() + 1_100; Date.now() < until; refused++) {
      const response = await api.usage();
      const body = expect429(response, 1);
      inTime(reset(response), `429 number ${refused + 1}`);
      assert.equal(reset(response), body.reset, `429 number ${refused + 1}`);
    }
  });
});

describe('per key', () => {
  test('two keys of one organization count separately', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: 5, usd: '1' });
    const second = await issueKey(service.store, service.clock, { orgId: org.orgId, name: 'second', mode: 'live' });
    await service.settle();
    const first = client(service, org.liveKey);
    await burst(first, 5);
    expect429(await first.usage(), 5);
    const other = client(service, second.apiKey);
    const response = await other.usage();
    expectStatus(response, 200);
    assert.equal(rateHeaders(response).remaining, 4);
    assert.equal((await client(service, org.testKey).usage()).statusCode, 200, 'the test key has its own count');
  });

  test('keys of other organizations are not affected', async () => {
    const a = await service.organization({ plan: 'enterprise', rateLimit: 3, usd: '1' });
    const b = await service.organization({ plan: 'enterprise', rateLimit: 3, usd: '1' });
    await burst(client(service, a.liveKey), 3);
    expect429(await client(service, a.liveKey).usage(), 3);
    assert.equal((await client(service, b.liveKey).usage()).statusCode, 200);
  });

  test('requests from many addresses with one key share its count', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: 4, usd: '1' });
    for (let i = 0; i < 4; i++) expectStatus(await client(service, org.liveKey, { remoteAddress: freshAddress() }).usage(), 200);
    expect429(await client(service, org.liveKey, { remoteAddress: freshAddress() }).usage(), 4);
  });
});

describe('failed authentications, per client address', () => {
  let limited: TestService;
  before(async () => {
    limited = await startTestService({ failedAuthLimit: 5 });
  });
  after(() => limited.close());

  test('the 6th failed request from one address is 429; other addresses and valid keys are unaffected', async () => {
    const address = freshAddress();
    const stranger = client(limited, 'vt_live_0000000000000000000000', { remoteAddress: address });
    for (let i = 0; i < 5; i++) {
      const response = await stranger.usage();
      expectError(response, 401, 'API key required');
      assert.equal(rateHeaders(response).limit, 5);
    }
    expect429(await stranger.usage(), 5);
    // no key at all, from the same address: the same count
    expect429(await client(limited, undefined, { remoteAddress: address }).list(), 5);
    // another address still gets its 401
    expectError(await client(limited, 'vt_live_0000000000000000000000', { remoteAddress: freshAddress() }).usage(), 401, 'API key required');
    // a valid key from the limited address is counted against the key, not the address
    const org = await limited.organization({ usd: '1' });
    expectStatus(await client(limited, org.liveKey, { remoteAddress: address }).usage(), 200);
  });

  test('unknown paths count the same: the 6th is 429, and the address stays limited on every route', async () => {
    const address = freshAddress();
    const stranger = client(limited, 'vt_live_0000000000000000000000', { remoteAddress: address });
    for (let i = 0; i < 5; i++) {
      const response = await stranger.get('/no-such-path');
      expectError(response, 401, 'API key required');
      const { limit, remaining } = rateHeaders(response);
      assert.deepEqual([limit, remaining], [5, 4 - i], `request ${i + 1}`);
    }
    expect429(await stranger.get('/no-such-path'), 5);
    expect429(await client(limited, undefined, { remoteAddress: address }).get('/nothing/here'), 5);
    expect429(await stranger.usage(), 5);
  });

  test('an address stays limited while more callers than the plugin\'s default 5,000 are counted in its window', async () => {
    const address = freshAddress();
    const stranger = client(limited, undefined, { remoteAddress: address });
    for (let i = 0; i < 5; i++) expectError(await stranger.usage(), 401, 'API key required');
    expect429(await stranger.usage(), 5);
    for (let i = 0; i < 6_000; i++) await client(limited, undefined, { remoteAddress: freshAddress() }).usage();
    expect429(await stranger.usage(), 5);
  });
});
