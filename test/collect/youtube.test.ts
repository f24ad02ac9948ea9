import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { nextPacificMidnight } from '../../src/collect/collectors/youtube-quota.ts';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';
import { ref } from './refs.ts';

// 11-character ids, as YouTube's are.
const idOf = (n: number) => `vid${String(n).padStart(8, '0')}`;

describe('YouTubeCollector', () => {
  let fake: YouTubeFake;
  let clock: ManualClock;
  const collector = (options: { dailyQuotaUnits?: number; fetchTimeoutMs?: number; apiKey?: string } = {}) =>
    new YouTubeCollector({ apiKey: options.apiKey ?? fake.apiKey, baseUrl: fake.baseUrl, clock, ...options });

  before(async () => {
    fake = await YouTubeFake.start();
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.videos.clear();
    fake.behaviour = 'normal';
    fake.oddItems.length = 0;
    fake.delayMs = 0;
    clock = new ManualClock('2026-07-01T12:00:00.000Z');
  });

  it('maps statistics to decimal strings and the snippet to metadata', async () => {
    fake.videos.set('dQw4w9WgXcQ', {
      title: 'Never Gonna Give You Up',
      channelTitle: 'Rick Astley',
      description: 'The official video',
      statistics: { viewCount: '1085567053', likeCount: '12479318', favoriteCount: '0', commentCount: '2003414' },
    });
    const [result] = await collector().collect([ref('youtube', 'dQw4w9WgXcQ')]);
    assert.deepEqual(result, {
      status: 'ok',
      metrics: { views: '1085567053', likes: '12479318', comments: '2003414' },
      metadata: { title: 'Never Gonna Give You Up', creator: 'Rick Astley', description: 'The official video' },
      provider: 'youtube-data-api-v3',
    });
    const request = fake.requests[0]!;
    assert.equal(request.query.get('part'), 'snippet,statistics');
    assert.equal(request.query.get('key'), fake.apiKey);
  });

  it('omits a hidden count and keeps counts beyond 2^53 exact, up to what a bigint holds', async () => {
    fake.videos.set(idOf(1), { title: 't', channelTitle: 'c', description: '', statistics: { viewCount: '9223372036854775807', commentCount: '0' } });
    fake.videos.set(idOf(2), { title: 't', channelTitle: 'c', description: '', statistics: { viewCount: '98765432109876543210', commentCount: '0' } });
    const [result, beyond] = await collector().collect([ref('youtube', idOf(1)), ref('youtube', idOf(2))]);
    assert.equal(result!.status, 'ok');
    assert.deepEqual(result!.status === 'ok' && result!.metrics, { views: '9223372036854775807', comments: '0' });
    assert.equal(beyond!.status, 'invalid', 'a count above 2^63 - 1 is a malformed answer');
  });

  it('asks for 50 ids a call: 120 videos take 3 calls, duplicates are asked once', async () => {
    const ids = Array.from({ length: 120 }, (_, n) => idOf(n));
    for (const id of ids) fake.videos.set(id, { title: id, channelTitle: 'c', description: '', statistics: { viewCount: '1' } });
    const refs = [...ids, ids[0]!, ids[119]!].map((id) => ref('youtube', id));
    const results = await collector().collect(refs);
    assert.deepEqual(fake.idsPerRequest().map((batch) => batch.length), [50, 50, 20]);
    assert.equal(results.length, 122);
    assert.deepEqual(results.map((result) => result.status === 'ok' && result.metadata.title), refs.map((r) => r.platformId));
  });

  it('answers not_found for an id missing from items and ok for the others', async () => {
    fake.videos.set(idOf(1), { title: 'one', channelTitle: 'c', description: '', statistics: { viewCount: '5' } });
    const results = await collector().collect([ref('youtube', idOf(1)), ref('youtube', idOf(2))]);
    assert.equal(results[0]!.status, 'ok');
    assert.deepEqual(results[1], { status: 'not_found', deleted: false, message: 'YouTube video not found or is private' });
    assert.equal(fake.requests.length, 1);
  });

  it('answers the other videos of a call when an item has no id or is no object: that item alone is skipped', async () => {
    fake.videos.set(idOf(1), { title: 'one', channelTitle: 'c', description: '', statistics: { viewCount: '5' } });
    fake.oddItems.push({ kind: 'youtube#video', snippet: { title: 'no id' }, statistics: {} }, { id: 42 }, 'not an item', null);
    const results = await collector().collect([ref('youtube', idOf(1)), ref('youtube', idOf(2))]);
    assert.deepEqual(results.map((result) => result.status), ['ok', 'not_found']);
  });

  it('answers not_found for an id that cannot be YouTube\'s, without a call', async () => {
    const [result] = await collector().collect([ref('youtube', 'short')]);
    assert.equal(result!.status, 'not_found');
    assert.equal(fake.requests.length, 0);
  });

  it('counts quota units and stops calling once they are spent, until midnight Pacific', async () => {
    const ids = Array.from({ length: 150 }, (_, n) => idOf(n));
    for (const id of ids) fake.videos.set(id, { title: id, channelTitle: 'c', description: '', statistics: {} });
    const youtube = collector({ dailyQuotaUnits: 2 });
    const results = await youtube.collect(ids.map((id) => ref('youtube', id)));
    assert.equal(fake.requests.length, 2);
    assert.equal(youtube.quotaRemaining(), 0);
    assert.ok(results.slice(0, 100).every((result) => result.status === 'ok'));
    const refused = results[100]!;
    assert.equal(refused.status, 'unavailable');
    assert.deepEqual(refused.status === 'unavailable' && refused.retryAfter, new Date('2026-07-02T07:00:00.000Z'));

    clock.set('2026-07-02T06:59:59.000Z');
    assert.equal((await youtube.collect([ref('youtube', idOf(0))]))[0]!.status, 'unavailable');
    assert.equal(fake.requests.length, 2);
    clock.set('2026-07-02T07:00:00.000Z');
    assert.equal((await youtube.collect([ref('youtube', idOf(0))]))[0]!.status, 'ok');
    assert.equal(fake.requests.length, 3);
  });

  it('treats 403 quotaExceeded as spent until midnight Pacific and makes no further call', async () => {
    fake.behaviour = 'quota-exceeded';
    const youtube = collector();
    const [result] = await youtube.collect([ref('youtube', idOf(1))]);
    assert.equal(result!.status, 'unavailable');
    assert.deepEqual(result!.status === 'unavailable' && result!.retryAfter, new Date('2026-07-02T07:00:00.000Z'));
    assert.match(result!.status === 'unavailable' ? result!.message : '', /quota/);
    fake.behaviour = 'normal';
    clock.advance(3_600_000);
    assert.equal((await youtube.collect([ref('youtube', idOf(1))]))[0]!.status, 'unavailable');
    assert.equal(fake.requests.length, 1);
    assert.equal(youtube.quotaRemaining(), 0);
  });

  it('answers unavailable naming YOUTUBE_API_KEY when the key is refused', async () => {
    const [result] = await collector({ apiKey: 'wrong' }).collect([ref('youtube', idOf(1))]);
    assert.equal(result!.status, 'unavailable');
    assert.match(result!.status === 'unavailable' ? result!.message : '', /YOUTUBE_API_KEY.*API key not valid/);
    assert.equal(result!.status === 'unavailable' && result!.retryAfter, undefined);
  });

  it('answers unavailable on 5xx, on a timeout and when nothing listens', async () => {
    fake.behaviour = 'server-error';
    assert.equal((await collector().collect([ref('youtube', idOf(1))]))[0]!.status, 'unavailable');
    fake.behaviour = 'normal';
    fake.delayMs = 1_000;
    const [timedOut] = await collector({ fetchTimeoutMs: 100 }).collect([ref('youtube', idOf(1))]);
    assert.deepEqual(timedOut, { status: 'unavailable', message: 'YouTube did not answer: no answer within 100 ms' });
    const nowhere = new YouTubeCollector({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9/youtube/v3', clock });
    assert.equal((await nowhere.collect([ref('youtube', idOf(1))]))[0]!.status, 'unavailable');
  });

  it('answers invalid for a malformed body, and for one malformed item only that video', async () => {
    fake.behaviour = 'malformed';
    assert.equal((await collector().collect([ref('youtube', idOf(1))]))[0]!.status, 'invalid');
    fake.behaviour = 'bad-item';
    fake.videos.set(idOf(1), { title: 't', channelTitle: 'c', description: '', statistics: {} });
    const results = await collector().collect([ref('youtube', idOf(1)), ref('youtube', idOf(2))]);
    assert.deepEqual(results.map((result) => result.status), ['invalid', 'not_found']);
  });
});

describe('nextPacificMidnight', () => {
  it('is 07:00 UTC in daylight time and 08:00 UTC in standard time, across the changes', () => {
    assert.equal(nextPacificMidnight(new Date('2026-07-01T12:00:00Z')).toISOString(), '2026-07-02T07:00:00.000Z');
    assert.equal(nextPacificMidnight(new Date('2026-01-15T12:00:00Z')).toISOString(), '2026-01-16T08:00:00.000Z');
    // 2026-03-08: clocks go forward at 02:00 Pacific.
    assert.equal(nextPacificMidnight(new Date('2026-03-08T06:00:00Z')).toISOString(), '2026-03-08T08:00:00.000Z');
    assert.equal(nextPacificMidnight(new Date('2026-03-08T12:00:00Z')).toISOString(), '2026-03-09T07:00:00.000Z');
    // 2026-11-01: clocks go back at 02:00 Pacific.
    assert.equal(nextPacificMidnight(new Date('2026-11-01T12:00:00Z')).toISOString(), '2026-11-02T08:00:00.000Z');
  });
});
