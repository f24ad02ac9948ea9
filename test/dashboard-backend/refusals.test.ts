// The dashboard's refusals are pages: the per-address sign-in limit answers a 429 page with
// Retry-After, a form without a valid CSRF token a 403 page asking to reload; neither is the
// API's JSON 400. The API's own answers keep the spec's shape: its 429 `Rate limit exceeded`
// with limit and reset, its 400 `Invalid request` with details.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

function isPage(answer: LightMyRequestResponse, status: number, text: RegExp): void {
  assert.equal(answer.statusCode, status, answer.body);
  assert.match(String(answer.headers['content-type']), /^text\/html; charset=utf-8/);
  assert.equal(answer.headers['cache-control'], 'no-store');
  assert.match(answer.body, /^<!doctype html>/);
  assert.match(answer.body, text);
}

const form = (fields: Record<string, string>) => ({ 'content-type': 'application/x-www-form-urlencoded', payload: new URLSearchParams(fields).toString() });

describe('dashboard refusals', () => {
  it('a form without a valid CSRF token is a 403 page asking to reload', async () => {
    const noToken = await service.app.inject({ method: 'POST', url: '/login', remoteAddress: '192.0.2.1', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40example.test&password=whatever' });
    isPage(noToken, 403, /This form has expired or did not come from this dashboard\. Reload the page and try again\./);
    // A token that is not the one of the page's secret.
    const page = await service.app.inject({ url: '/login' });
    const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const { payload } = form({ email: 'a@example.test', password: 'whatever', _csrf: 'not-the-token' });
    const wrongToken = await service.app.inject({ method: 'POST', url: '/login', remoteAddress: '192.0.2.1', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload });
    isPage(wrongToken, 403, /This form has expired/);
    isPage(await service.app.inject({ method: 'POST', url: '/logout', headers: { cookie } }), 403, /Reload the page and try again/);
  });

  it('past the per-address sign-in limit, a 429 page with Retry-After', async () => {
    // The limit counts every sign-in request, refused ones too: 20 cheap ones (no token) use it up.
    for (let i = 0; i < 20; i++) {
      const answer = await service.app.inject({ method: 'POST', url: '/login', remoteAddress: '192.0.2.2', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40example.test' });
      assert.equal(answer.statusCode, 403, `request ${i + 1}: ${answer.body}`);
    }
    const limited = await service.app.inject({ method: 'POST', url: '/login', remoteAddress: '192.0.2.2', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40example.test' });
    isPage(limited, 429, /Too many attempts from your network: wait (a second|\d+ seconds) and try again\./);
    const retryAfter = String(limited.headers['retry-after']);
    assert.match(retryAfter, /^\d+$/);
    assert.ok(Number(retryAfter) > 0 && Number(retryAfter) <= 60, `Retry-After ${retryAfter}`);
    // Another address is not concerned.
    const elsewhere = await service.app.inject({ method: 'POST', url: '/login', remoteAddress: '192.0.2.3', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40example.test' });
    assert.equal(elsewhere.statusCode, 403);
  });
});

describe('the API beside it', () => {
  it('keeps its 429 in the spec\'s shape (JSON, limit and reset) and its 400 Invalid request with details', async () => {
    const org = await service.organization({ rateLimit: 2 });
    const usage = () => service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
    assert.equal((await usage()).statusCode, 200);
    assert.equal((await usage()).statusCode, 200);
    const limited = await usage();
    assert.equal(limited.statusCode, 429, limited.body);
    assert.match(String(limited.headers['content-type']), /^application\/json/);
    const body = limited.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'limit', 'reset']);
    assert.equal(body.error, 'Rate limit exceeded');
    assert.equal(body.limit, 2);

    const other = await service.organization();
    const invalid = await service.app.inject({ method: 'POST', url: '/api/v1/videos/track', headers: { 'x-api-key': other.liveKey, 'content-type': 'application/json' }, payload: '{"video_link": 5}' });
    assert.equal(invalid.statusCode, 400, invalid.body);
    assert.match(String(invalid.headers['content-type']), /^application\/json/);
    const refused = invalid.json();
    assert.equal(refused.error, 'Invalid request');
    assert.ok(Array.isArray(refused.details) && refused.details.length > 0, invalid.body);
    for (const detail of refused.details) assert.deepEqual(Object.keys(detail).sort(), ['field', 'message']);
  });
});
