import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { MAX_BLOCK_MS } from '../../src/collect/collectors/backoff.ts';
import { TwitterCollector } from '../../src/collect/collectors/twitter.ts';
import { type FakeTweet, XFake } from '../support/fakes/x-fake.ts';
import { ref } from './refs.ts';

const START = new Date('2026-07-01T12:00:00.000Z');
const RESET = START.getTime() / 1000 + 900;

function tweet(overrides: Partial<FakeTweet['publicMetrics']> = {}): FakeTweet {
  return {
    text: 'Watch this',
    author: { id: '2244994945', username: 'XDevelopers', name: 'Developers' },
    publicMetrics: { retweet_count: 10, reply_count: 5, like_count: 100, quote_count: 2, bookmark_count: 3, impression_count: 1500, ...overrides },
  };
}

describe('TwitterCollector', () => {
  let fake: XFake;
  let clock: ManualClock;
  const collector = (options: { bearerToken?: string; fetchTimeoutMs?: number } = {}) =>
    new TwitterCollector({ bearerToken: options.bearerToken ?? fake.bearerToken, baseUrl: fake.baseUrl, clock, fetchTimeoutMs: options.fetchTimeoutMs });

  before(async () => {
    fake = await XFake.start();
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.tweets.clear();
    fake.protectedIds.clear();
    fake.behaviour = 'normal';
    fake.oddPosts.length = 0;
    fake.oddUsers.length = 0;
    fake.oddErrors.length = 0;
    fake.delayMs = 0;
    fake.remaining = fake.limit;
    fake.resetAt = RESET;
    clock = new ManualClock(START);
  });

  it('maps public_metrics: views from impressions, comments = replies, shares = retweets', async () => {
    fake.tweets.set('1228393702244134912', tweet());
    const [result] = await collector().collect([ref('twitter', '1228393702244134912')]);
    assert.deepEqual(result, {
      status: 'ok',
      metrics: { views: '1500', likes: '100', comments: '5', shares: '10', retweets: '10', replies: '5' },
      metadata: { title: '', creator: 'XDevelopers', description: 'Watch this' },
      provider: 'x-api-v2',
    });
    const request = fake.requests[0]!;
    assert.equal(request.headers.authorization, `Bearer ${fake.bearerToken}`);
    assert.match(request.query.get('tweet.fields') ?? '', /public_metrics/);
    assert.equal(request.query.get('expansions'), 'author_id');
  });

  it('omits views when X gives no impression_count', async () => {
    fake.tweets.set('1', tweet({ impression_count: undefined }));
    const [result] = await collector().collect([ref('twitter', '1')]);
    assert.equal(result!.status === 'ok' && result!.metrics.views, undefined);
  });

  it('asks for 100 ids a call: 150 posts take 2 calls', async () => {
    const ids = Array.from({ length: 150 }, (_, n) => String(1_000_000 + n));
    for (const id of ids) fake.tweets.set(id, tweet());
    const results = await collector().collect(ids.map((id) => ref('twitter', id)));
    assert.deepEqual(fake.idsPerRequest().map((batch) => batch.length), [100, 50]);
    assert.ok(results.every((result) => result.status === 'ok'));
  });

  it('reads per-post errors: missing is deleted, protected is not, the rest is ok', async () => {
    fake.tweets.set('1', tweet());
    fake.protectedIds.add('3');
    const results = await collector().collect([ref('twitter', '1'), ref('twitter', '2'), ref('twitter', '3')]);
    assert.equal(results[0]!.status, 'ok');
    assert.deepEqual(results[1], { status: 'not_found', deleted: true, message: 'Could not find tweet with ids: [2].' });
    assert.equal(results[2]!.status, 'not_found');
    assert.equal(results[2]!.status === 'not_found' && results[2]!.deleted, false);
    assert.equal(fake.requests.length, 1);
  });

  it('answers the other posts of a call when one entry is odd: a user without username costs only its posts', async () => {
    fake.tweets.set('1', tweet());
    fake.tweets.set('2', { ...tweet(), author: { id: '77', name: 'No handle' } });
    fake.oddPosts.push({ text: 'a post without an id', public_metrics: tweet().publicMetrics }, 'not a post');
    fake.oddUsers.push('not a user', { username: 'no id' });
    fake.oddErrors.push(7);
    const [good, noHandle] = await collector().collect([ref('twitter', '1'), ref('twitter', '2')]);
    assert.equal(good!.status === 'ok' && good!.metadata.creator, 'XDevelopers');
    assert.deepEqual(noHandle, { status: 'invalid', message: 'X answered an unexpected video: user username is not a string' });
  });

  it('does not send a call with an id that is not numeric', async () => {
    fake.tweets.set('1', tweet());
    const results = await collector().collect([ref('twitter', 'abc'), ref('twitter', '1')]);
    assert.deepEqual(results.map((result) => result.status), ['not_found', 'ok']);
    assert.deepEqual(fake.idsPerRequest(), [['1']]);
  });

  it('stops when the window is used up, until x-rate-limit-reset, before any 429', async () => {
    fake.tweets.set('1', tweet());
    fake.remaining = 1;
    const x = collector();
    assert.equal((await x.collect([ref('twitter', '1')]))[0]!.status, 'ok');
    const [held] = await x.collect([ref('twitter', '1')]);
    assert.equal(held!.status, 'unavailable');
    assert.deepEqual(held!.status === 'unavailable' && held!.retryAfter, new Date(RESET * 1000));
    assert.equal(fake.requests.length, 1);
    fake.remaining = fake.limit;
    clock.set(new Date(RESET * 1000));
    assert.equal((await x.collect([ref('twitter', '1')]))[0]!.status, 'ok');
    assert.equal(fake.requests.length, 2);
  });

  it('answers 429 with unavailable until the reset and sends no further call before it', async () => {
    fake.tweets.set('1', tweet());
    fake.remaining = 0;
    const x = collector();
    const ids = Array.from({ length: 150 }, (_, n) => String(n + 1));
    const results = await x.collect(ids.map((id) => ref('twitter', id)));
    assert.ok(results.every((result) => result.status === 'unavailable' && result.retryAfter?.getTime() === RESET * 1000));
    assert.equal(fake.requests.length, 1, 'the second batch is not sent after a 429');
    clock.advance(60_000);
    await x.collect([ref('twitter', '1')]);
    assert.equal(fake.requests.length, 1);
  });

  it('holds X, at most a day, whatever reset X names', async () => {
    fake.tweets.set('1', tweet());
    for (const resetAt of [99_999_999_999, 99_999_999_999_999]) {
      fake.remaining = 0;
      fake.resetAt = resetAt;
      const x = collector();
      const [held] = await x.collect([ref('twitter', '1')]);
      assert.equal(held!.status, 'unavailable');
      const until = held!.status === 'unavailable' ? held!.retryAfter : undefined;
      assert.ok(until && until.getTime() <= clock.now().getTime() + MAX_BLOCK_MS, `reset ${resetAt}: held until ${until?.toISOString()}`);
      fake.remaining = fake.limit;
      clock.advance(MAX_BLOCK_MS);
      assert.equal((await x.collect([ref('twitter', '1')]))[0]!.status, 'ok', `reset ${resetAt}: X is asked again a day later`);
    }
  });

  it('holds X for a day when its reset is past what a Date can hold', async () => {
    fake.tweets.set('1', tweet());
    fake.remaining = 0;
    fake.resetAt = 99_999_999_999_999;
    const x = collector();
    const [held] = await x.collect([ref('twitter', '1')]);
    assert.deepEqual(held!.status === 'unavailable' && held!.retryAfter, new Date(clock.now().getTime() + MAX_BLOCK_MS));
    fake.remaining = fake.limit;
    clock.advance(MAX_BLOCK_MS - 1);
    assert.equal((await x.collect([ref('twitter', '1')]))[0]!.status, 'unavailable');
    assert.equal(fake.requests.length, 1, 'no call before the day is over');
  });

  it('answers unavailable naming X_BEARER_TOKEN on 401', async () => {
    const [result] = await collector({ bearerToken: 'wrong' }).collect([ref('twitter', '1')]);
    assert.deepEqual(result, { status: 'unavailable', message: 'X refused the bearer token (X_BEARER_TOKEN): Unauthorized' });
  });

  it('answers unavailable on 5xx and on a timeout', async () => {
    fake.behaviour = 'server-error';
    assert.deepEqual((await collector().collect([ref('twitter', '1')]))[0], { status: 'unavailable', message: 'X answered HTTP 503' });
    fake.behaviour = 'normal';
    fake.delayMs = 1_000;
    assert.equal((await collector({ fetchTimeoutMs: 100 }).collect([ref('twitter', '1')]))[0]!.status, 'unavailable');
  });

  it('answers invalid when the body is not JSON or not the API\'s shape', async () => {
    fake.behaviour = 'malformed';
    assert.equal((await collector().collect([ref('twitter', '1')]))[0]!.status, 'invalid');
    fake.behaviour = 'wrong-shape';
    assert.equal((await collector().collect([ref('twitter', '1')]))[0]!.status, 'invalid');
  });
});
