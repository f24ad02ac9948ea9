import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { MAX_BLOCK_MS } from '../../src/collect/collectors/backoff.ts';
import { instagramUsername } from '../../src/collect/collectors/instagram-links.ts';
import { InstagramCollector } from '../../src/collect/collectors/instagram.ts';
import { type FakeInstagramPost, InstagramFake } from '../support/fakes/instagram-fake.ts';
import { ref } from './refs.ts';

const START = '2026-07-01T12:00:00.000Z';
const link = (user: string, code: string, kind = 'p') => `https://www.instagram.com/${user}/${kind}/${code}/`;
const posts = (count: number): FakeInstagramPost[] =>
  Array.from({ length: count }, (_, n) => ({ id: `1790000000000${n}`, shortcode: `Code${n}`, caption: `post ${n}`, likeCount: n * 10, commentsCount: n }));

describe('InstagramCollector', () => {
  let fake: InstagramFake;
  let clock: ManualClock;
  const collector = (options: { accessToken?: string; pageSize?: number; maxPages?: number; fetchTimeoutMs?: number; callDeadlineMs?: number } = {}) =>
    new InstagramCollector({ accessToken: fake.accessToken, userId: fake.userId, baseUrl: fake.baseUrl, clock, ...options });

  before(async () => {
    fake = await InstagramFake.start();
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.accounts.clear();
    fake.behaviour = 'normal';
    fake.delayMs = 0;
    fake.businessUsage = undefined;
    fake.omitShortcode = false;
    fake.oddPosts.length = 0;
    clock = new ManualClock(START);
  });

  it('finds the post by shortcode through business discovery and maps likes and comments', async () => {
    fake.accounts.set('brand', [{ id: '17900000000000001', shortcode: 'DAbc_12-x', caption: 'New drop', likeCount: 1234, commentsCount: 56 }]);
    const [result] = await collector().collect([ref('instagram', 'DAbc_12-x', link('brand', 'DAbc_12-x', 'reel'))]);
    assert.deepEqual(result, {
      status: 'ok',
      metrics: { likes: '1234', comments: '56' },
      metadata: { title: '', creator: 'brand', description: 'New drop' },
      provider: 'instagram-graph-api',
    });
    const request = fake.requests[0]!;
    assert.equal(request.path, `/v25.0/${fake.userId}`);
    assert.match(request.query.get('fields') ?? '', /^business_discovery\.username\(brand\)\{username,media\.limit\(50\)\{/);
  });

  it('omits likes when the owner hides them', async () => {
    fake.accounts.set('brand', [{ id: '1', shortcode: 'C1', commentsCount: 3 }]);
    const [result] = await collector().collect([ref('instagram', 'C1', link('brand', 'C1'))]);
    assert.deepEqual(result!.status === 'ok' && result!.metrics, { comments: '3' });
  });

  it('pages through the owner\'s media, once for all of that owner\'s posts, and stops when all are found', async () => {
    fake.accounts.set('brand', posts(12));
    const results = await collector({ pageSize: 5 }).collect([
      ref('instagram', 'Code1', link('brand', 'Code1')),
      ref('instagram', 'Code7', link('brand', 'Code7')),
    ]);
    assert.deepEqual(results.map((result) => result.status === 'ok' && result.metrics.likes), ['10', '70']);
    assert.equal(fake.requests.length, 2, 'page 3 is not needed');
    assert.match(fake.requests[1]!.query.get('fields') ?? '', /media\.after\([^)]+\)\.limit\(5\)/);
  });

  it('answers not_found when the post is not among the owner\'s posts, or beyond the pages searched', async () => {
    fake.accounts.set('brand', posts(12));
    const [missing] = await collector({ pageSize: 5 }).collect([ref('instagram', 'Nope', link('brand', 'Nope'))]);
    assert.deepEqual(missing, { status: 'not_found', deleted: false, message: 'Instagram post not found on @brand' });
    assert.equal(fake.requests.length, 3);
    const [tooOld] = await collector({ pageSize: 5, maxPages: 1 }).collect([ref('instagram', 'Code9', link('brand', 'Code9'))]);
    assert.deepEqual(tooOld, { status: 'not_found', deleted: false, message: 'Instagram post not found on @brand among its 5 most recent posts' });
  });

  it('matches on permalink when the answer carries no shortcode', async () => {
    fake.accounts.set('brand', posts(3));
    fake.omitShortcode = true;
    const [result] = await collector().collect([ref('instagram', 'Code2', link('brand', 'Code2'))]);
    assert.equal(result!.status, 'ok');
  });

  it('reads past a post whose permalink is no text, and leaves other owners\' posts alone', async () => {
    fake.accounts.set('odd', [{ ...posts(1)[0]!, shortcode: 'Odd0', permalink: { toString: 1 } }]);
    fake.accounts.set('brand', posts(1));
    fake.omitShortcode = true;
    const [odd, brand] = await collector().collect([ref('instagram', 'Odd0', link('odd', 'Odd0')), ref('instagram', 'Code0', link('brand', 'Code0'))]);
    assert.equal(odd!.status, 'not_found');
    assert.equal(brand!.status, 'ok');
  });

  it('reads past a post that is no object, on every page of the walk', async () => {
    fake.accounts.set('brand', posts(6));
    fake.oddPosts.push('not a post', null, 7);
    const results = await collector({ pageSize: 3 }).collect([ref('instagram', 'Code1', link('brand', 'Code1')), ref('instagram', 'Code4', link('brand', 'Code4'))]);
    assert.deepEqual(results.map((result) => result.status), ['ok', 'ok']);
  });

  it('answers not_found, with no call, for a link that does not name the owner', async () => {
    const [result] = await collector().collect([ref('instagram', 'Code1', 'https://www.instagram.com/p/Code1/')]);
    assert.equal(result!.status, 'not_found');
    assert.match(result!.status === 'not_found' ? result!.message : '', /instagram\.com\/<username>\/p\/<code>/);
    assert.equal(fake.requests.length, 0);
  });

  it('answers not_found for an account that is unknown or not professional', async () => {
    const [result] = await collector().collect([ref('instagram', 'Code1', link('someone', 'Code1'))]);
    assert.equal(result!.status, 'not_found');
    assert.match(result!.status === 'not_found' ? result!.message : '', /@someone not found or not a professional account/);
  });

  it('answers unavailable naming INSTAGRAM_ACCESS_TOKEN for a bad token (code 190)', async () => {
    fake.accounts.set('brand', posts(1));
    const [result] = await collector({ accessToken: 'wrong' }).collect([ref('instagram', 'Code0', link('brand', 'Code0'))]);
    assert.equal(result!.status, 'unavailable');
    assert.match(result!.status === 'unavailable' ? result!.message : '', /INSTAGRAM_ACCESS_TOKEN.*code 190/);
  });

  it('backs off on throttling codes for Meta\'s estimate, sending nothing before', async () => {
    fake.accounts.set('brand', posts(1));
    fake.behaviour = 'throttled';
    fake.businessUsage = { '1234': [{ type: 'instagram', call_count: 100, total_cputime: 20, total_time: 30, estimated_time_to_regain_access: 7 }] };
    const instagram = collector();
    const [result] = await instagram.collect([ref('instagram', 'Code0', link('brand', 'Code0'))]);
    assert.deepEqual(result!.status === 'unavailable' && result!.retryAfter, new Date('2026-07-01T12:07:00.000Z'));
    fake.behaviour = 'normal';
    fake.businessUsage = undefined;
    clock.advance(6 * 60_000);
    assert.equal((await instagram.collect([ref('instagram', 'Code0', link('brand', 'Code0'))]))[0]!.status, 'unavailable');
    assert.equal(fake.requests.length, 1);
    clock.advance(60_000);
    assert.equal((await instagram.collect([ref('instagram', 'Code0', link('brand', 'Code0'))]))[0]!.status, 'ok');
  });

  it('stops for a day at most when Meta\'s estimate is past what a Date can hold', async () => {
    fake.accounts.set('brand', posts(1));
    const wanted = [ref('instagram', 'Code0', link('brand', 'Code0'))];
    for (const minutes of [1e12, 1e308]) {
      fake.businessUsage = { '1234': [{ type: 'instagram', call_count: 100, total_cputime: 5, total_time: 5, estimated_time_to_regain_access: minutes }] };
      fake.requests.length = 0;
      const instagram = collector();
      assert.equal((await instagram.collect(wanted))[0]!.status, 'ok');
      const [held] = await instagram.collect(wanted);
      assert.deepEqual(held!.status === 'unavailable' && held!.retryAfter, new Date(clock.now().getTime() + MAX_BLOCK_MS), `${minutes} minutes`);
      assert.equal(fake.requests.length, 1, `${minutes} minutes: no call while at 100 %`);
    }
  });

  it('stops before the refusals when the usage headers reach 100 %', async () => {
    fake.accounts.set('brand', posts(1));
    fake.accounts.set('other', posts(1));
    fake.businessUsage = { '1234': [{ type: 'instagram', call_count: 100, total_cputime: 5, total_time: 5, estimated_time_to_regain_access: 0 }] };
    const results = await collector().collect([ref('instagram', 'Code0', link('brand', 'Code0')), ref('instagram', 'Code0x', link('other', 'Code0x'))]);
    assert.deepEqual(results.map((result) => result.status), ['ok', 'unavailable']);
    assert.equal(fake.requests.length, 1);
  });

  it('stops a slow owner walk at the call\'s deadline, its last page cut to the time left; what is left unasked is our limit', async () => {
    fake.accounts.set('brand', posts(2000));
    fake.accounts.set('other', posts(1));
    fake.delayMs = 300; // each page answers well inside the 10 s request timeout
    const deadlineMs = 1_000;
    const started = performance.now();
    const results = await collector({ callDeadlineMs: deadlineMs }).collect([
      ref('instagram', 'OldPost', link('brand', 'OldPost')),
      ref('instagram', 'Code0', link('other', 'Code0')),
    ]);
    const took = performance.now() - started;
    // 20 pages of 300 ms would take 6 s; the deadline lets 3 answer and cuts the 4th.
    assert.ok(took < deadlineMs + 250, `the call took ${Math.round(took)} ms against a ${deadlineMs} ms deadline`);
    assert.ok(fake.requests.length <= 4, `${fake.requests.length} pages asked`);
    for (const result of results) assert.ok(result.status === 'unavailable' && result.ownLimit, JSON.stringify(result));
    assert.ok(fake.requests.every((request) => (request.query.get('fields') ?? '').includes('username(brand)')), 'the other owner is not asked');
  });

  it('answers unavailable on 5xx and on a timeout, invalid on a malformed answer', async () => {
    fake.accounts.set('brand', posts(1));
    const one = [ref('instagram', 'Code0', link('brand', 'Code0'))];
    fake.behaviour = 'server-error';
    assert.equal((await collector().collect(one))[0]!.status, 'unavailable');
    fake.behaviour = 'malformed';
    assert.equal((await collector().collect(one))[0]!.status, 'invalid');
    fake.behaviour = 'normal';
    fake.delayMs = 1_000;
    assert.equal((await collector({ fetchTimeoutMs: 100 }).collect(one))[0]!.status, 'unavailable');
  });
});

describe('instagramUsername', () => {
  it('reads the owner from /<user>/p|reel|reels|tv/<code>/ links and nothing else', () => {
    assert.equal(instagramUsername('https://www.instagram.com/brand.co_1/p/Code1/'), 'brand.co_1');
    assert.equal(instagramUsername('https://instagram.com/brand/reel/Code1/?igsh=abc'), 'brand');
    assert.equal(instagramUsername('https://www.instagram.com/p/Code1/'), undefined);
    assert.equal(instagramUsername('https://www.instagram.com/reel/Code1/'), undefined);
    assert.equal(instagramUsername('https://www.example.com/brand/p/Code1/'), undefined);
  });
});
