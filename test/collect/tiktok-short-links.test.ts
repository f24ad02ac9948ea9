import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { isTikTokShortLink, resolveTikTokShortLink } from '../../src/collect/collectors/tiktok-short-links.ts';
import { TikTokShortLinkFake } from '../support/fakes/tiktok-short-link-fake.ts';

const LONG = 'https://www.tiktok.com/@creator/video/7170520270497680683?_r=1&_t=8abc';

describe('TikTok short links', () => {
  let fake: TikTokShortLinkFake;
  const resolve = (link: string, fetchTimeoutMs?: number) => resolveTikTokShortLink(link, { origin: fake.origin, fetchTimeoutMs });

  before(async () => {
    fake = await TikTokShortLinkFake.start();
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.links.clear();
    fake.delayMs = 0;
  });

  it('recognises the short shapes and only them', () => {
    assert.equal(isTikTokShortLink('https://vm.tiktok.com/ZMabc123/'), true);
    assert.equal(isTikTokShortLink('https://vt.tiktok.com/ZSxyz/'), true);
    assert.equal(isTikTokShortLink('https://www.tiktok.com/t/ZTcode/'), true);
    assert.equal(isTikTokShortLink(LONG), false);
    assert.equal(isTikTokShortLink('https://vm.example.com/ZMabc123/'), false);
  });

  it('follows the redirect to the numeric id, with one request and no page body', async () => {
    fake.links.set('/ZMabc123/', { status: 301, location: LONG });
    assert.deepEqual(await resolve('https://vm.tiktok.com/ZMabc123/'), { status: 'resolved', platformId: '7170520270497680683' });
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0]!.method, 'GET');
  });

  it('follows a chain of redirects, relative ones included', async () => {
    fake.links.set('/t/ZTcode/', { status: 302, location: '/ZMnext/' });
    fake.links.set('/ZMnext/', { status: 301, location: 'https://m.tiktok.com/v/7170520270497680683.html?u_code=x' });
    assert.deepEqual(await resolve('https://www.tiktok.com/t/ZTcode/'), { status: 'resolved', platformId: '7170520270497680683' });
    assert.equal(fake.requests.length, 2);
  });

  it('answers not_found when the link is unknown or leads to no video', async () => {
    assert.equal((await resolve('https://vm.tiktok.com/ZMgone/')).status, 'not_found');
    fake.links.set('/ZMhome/', { status: 302, location: 'https://www.tiktok.com/' });
    fake.links.set('/', { status: 200 });
    assert.equal((await resolve('https://vm.tiktok.com/ZMhome/')).status, 'not_found');
    fake.links.set('/ZMaway/', { status: 302, location: 'https://example.com/@creator/video/1' });
    assert.equal((await resolve('https://vm.tiktok.com/ZMaway/')).status, 'not_found');
  });

  it('answers invalid when a redirect leads to a malformed address', async () => {
    fake.links.set('/ZMbroken/', { status: 302, location: 'https://www.tik tok.com/@creator/video/1' });
    assert.deepEqual(await resolve('https://vm.tiktok.com/ZMbroken/'), { status: 'invalid', message: 'TikTok short link redirects to a malformed address' });
  });

  it('answers not_found after too many redirects', async () => {
    fake.links.set('/ZMloop/', { status: 302, location: '/ZMloop/' });
    const result = await resolve('https://vm.tiktok.com/ZMloop/');
    assert.deepEqual(result, { status: 'not_found', deleted: false, message: 'TikTok short link redirects too many times' });
    assert.equal(fake.requests.length, 6);
  });

  it('answers unavailable on 5xx and on a timeout', async () => {
    fake.links.set('/ZMdown/', { status: 503 });
    assert.deepEqual(await resolve('https://vm.tiktok.com/ZMdown/'), { status: 'unavailable', message: 'TikTok answered HTTP 503' });
    fake.links.set('/ZMslow/', { status: 301, location: LONG });
    fake.delayMs = 1_000;
    assert.equal((await resolve('https://vm.tiktok.com/ZMslow/', 100)).status, 'unavailable');
  });

  it('resolves a long link without any request', async () => {
    assert.deepEqual(await resolve(LONG), { status: 'resolved', platformId: '7170520270497680683' });
    assert.equal(fake.requests.length, 0);
  });
});
