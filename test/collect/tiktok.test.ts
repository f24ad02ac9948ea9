import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { TikTokCollector } from '../../src/collect/collectors/tiktok.ts';
import { groupByCreation, windowFor } from '../../src/collect/collectors/tiktok-dates.ts';
import { type FakeTikTokVideo, TikTokFake, tiktokIdAt } from '../support/fakes/tiktok-fake.ts';
import { ref } from './refs.ts';

const NOW = '2026-07-01T12:00:00.000Z';

function video(overrides: Partial<FakeTikTokVideo> = {}): FakeTikTokVideo {
  return { username: 'creator', description: 'a dance', viewCount: 54320, likeCount: 1245, commentCount: 87, shareCount: 312, favouritesCount: 40, ...overrides };
}

describe('TikTokCollector', () => {
  let fake: TikTokFake;
  let clock: ManualClock;
  const collector = (options: { clientSecret?: string; fetchTimeoutMs?: number; callDeadlineMs?: number } = {}) =>
    new TikTokCollector({
      clientKey: fake.clientKey,
      clientSecret: options.clientSecret ?? fake.clientSecret,
      baseUrl: fake.baseUrl,
      clock,
      fetchTimeoutMs: options.fetchTimeoutMs,
      callDeadlineMs: options.callDeadlineMs,
    });

  before(async () => {
    fake = await TikTokFake.start();
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.videos.clear();
    fake.behaviour = 'normal';
    fake.oddVideos.length = 0;
    fake.retryAfter = '120';
    fake.delayMs = 0;
    fake.pageSize = 100;
    fake.tokenLifetimeSeconds = 7200;
    fake.tokensIssued = 0;
    fake.revokeTokens();
    clock = new ManualClock(NOW);
  });

  it('maps a video, keeping its id beyond 2^53 exact and saves from favourites_count', async () => {
    const id = tiktokIdAt('2026-06-20T10:00:00Z', 123);
    assert.ok(BigInt(id) > BigInt(Number.MAX_SAFE_INTEGER));
    fake.videos.set(id, video());
    const [result] = await collector().collect([ref('tiktok', id)]);
    assert.deepEqual(result, {
      status: 'ok',
      metrics: { views: '54320', likes: '1245', comments: '87', shares: '312', saves: '40' },
      metadata: { title: '', creator: 'creator', description: 'a dance' },
      provider: 'tiktok-research-api',
    });
    const query = fake.queries()[0]!;
    assert.equal(query.headers.authorization, 'Bearer clt.fake1');
    const body = JSON.parse(query.body);
    assert.deepEqual(body.query.and[0].field_values, [id]);
    assert.equal(body.start_date, '20260619');
    assert.equal(body.end_date, '20260621');
  });

  it('queries 100 ids at a time, and separately for videos created too far apart', async () => {
    const recent = Array.from({ length: 150 }, (_, n) => tiktokIdAt('2026-06-25T00:00:00Z', n));
    const old = [tiktokIdAt('2025-01-10T00:00:00Z', 1), tiktokIdAt('2025-03-01T00:00:00Z', 2)];
    for (const id of [...recent, ...old]) fake.videos.set(id, video());
    const refs = [...old, ...recent].map((id) => ref('tiktok', id));
    const results = await collector().collect(refs);
    assert.ok(results.every((result) => result.status === 'ok'));
    assert.deepEqual(fake.idsPerQuery().map((ids) => ids.length).sort((a, b) => a - b), [1, 1, 50, 100]);
  });

  it('answers not_found for a video left out of the answer, ok for the others', async () => {
    const [kept, gone] = [tiktokIdAt('2026-06-01T00:00:00Z', 1), tiktokIdAt('2026-06-01T00:00:00Z', 2)];
    fake.videos.set(kept, video());
    const results = await collector().collect([ref('tiktok', kept), ref('tiktok', gone)]);
    assert.equal(results[0]!.status, 'ok');
    assert.deepEqual(results[1], { status: 'not_found', deleted: false, message: 'TikTok video not found or is private' });
  });

  it('answers the other videos of a query when a video has no id or is no object: that video alone is skipped', async () => {
    const [kept, gone] = [tiktokIdAt('2026-06-01T00:00:00Z', 1), tiktokIdAt('2026-06-01T00:00:00Z', 2)];
    fake.videos.set(kept, video());
    fake.oddVideos.push({ username: 'no id', view_count: 1 }, { id: -1 }, 'not a video', null);
    const results = await collector().collect([ref('tiktok', kept), ref('tiktok', gone)]);
    assert.deepEqual(results.map((result) => result.status), ['ok', 'not_found']);
  });

  it('follows has_more pages until every video is found', async () => {
    fake.pageSize = 2;
    const ids = Array.from({ length: 5 }, (_, n) => tiktokIdAt('2026-06-01T00:00:00Z', n));
    for (const id of ids) fake.videos.set(id, video());
    const results = await collector().collect(ids.map((id) => ref('tiktok', id)));
    assert.ok(results.every((result) => result.status === 'ok'));
    const bodies = fake.queries().map((query) => JSON.parse(query.body));
    assert.deepEqual(bodies.map((body) => [body.cursor, body.search_id]), [[undefined, undefined], [2, 'search-1'], [4, 'search-1']]);
  });

  it('stops following has_more pages at the call\'s deadline: the pages read stay good, the videos still missing are our limit', async () => {
    fake.pageSize = 1;
    const ids = Array.from({ length: 5 }, (_, n) => tiktokIdAt('2026-06-01T00:00:00Z', n));
    for (const id of ids) fake.videos.set(id, video());
    fake.delayMs = 300; // the token, then each page, answers well inside the 10 s request timeout
    const deadlineMs = 700;
    const started = performance.now();
    const results = await collector({ callDeadlineMs: deadlineMs }).collect(ids.map((id) => ref('tiktok', id)));
    const took = performance.now() - started;
    // Token and 5 pages of 300 ms would take 1.8 s; the deadline lets the token and one page answer and cuts the 2nd.
    assert.ok(took < deadlineMs + 250, `the call took ${Math.round(took)} ms against a ${deadlineMs} ms deadline`);
    assert.equal(results[0]!.status, 'ok');
    for (const result of results.slice(1)) assert.ok(result.status === 'unavailable' && result.ownLimit, JSON.stringify(result));
  });

  it('fetches the token once and replaces it shortly before it expires', async () => {
    const id = tiktokIdAt('2026-06-01T00:00:00Z', 1);
    fake.videos.set(id, video());
    const tiktok = collector();
    await Promise.all([tiktok.collect([ref('tiktok', id)]), tiktok.collect([ref('tiktok', id)])]);
    await tiktok.collect([ref('tiktok', id)]);
    assert.equal(fake.tokensIssued, 1);
    clock.advance((7200 - 5 * 60) * 1000 - 1);
    await tiktok.collect([ref('tiktok', id)]);
    assert.equal(fake.tokensIssued, 1);
    clock.advance(1);
    assert.equal((await tiktok.collect([ref('tiktok', id)]))[0]!.status, 'ok');
    assert.equal(fake.tokensIssued, 2);
    assert.equal(fake.queries().at(-1)!.headers.authorization, 'Bearer clt.fake2');
    const form = new URLSearchParams(fake.requests.find((request) => request.path === '/v2/oauth/token/')!.body);
    assert.equal(form.get('grant_type'), 'client_credentials');
  });

  it('fetches a new token and retries once when TikTok rejects the current one', async () => {
    const id = tiktokIdAt('2026-06-01T00:00:00Z', 1);
    fake.videos.set(id, video());
    const tiktok = collector();
    await tiktok.collect([ref('tiktok', id)]);
    fake.revokeTokens();
    assert.equal((await tiktok.collect([ref('tiktok', id)]))[0]!.status, 'ok');
    assert.equal(fake.tokensIssued, 2);
    assert.equal(fake.queries().length, 3);
  });

  it('answers unavailable naming the credentials when the client secret is refused', async () => {
    const [result] = await collector({ clientSecret: 'wrong' }).collect([ref('tiktok', tiktokIdAt('2026-06-01T00:00:00Z', 1))]);
    assert.equal(result!.status, 'unavailable');
    assert.match(result!.status === 'unavailable' ? result!.message : '', /TIKTOK_CLIENT_KEY.*invalid_client/);
    assert.equal(fake.queries().length, 0);
  });

  it('answers unavailable when the research scope is not authorized', async () => {
    fake.behaviour = 'scope-not-authorized';
    const [result] = await collector().collect([ref('tiktok', tiktokIdAt('2026-06-01T00:00:00Z', 1))]);
    assert.equal(result!.status, 'unavailable');
    assert.match(result!.status === 'unavailable' ? result!.message : '', /scope_not_authorized/);
  });

  it('backs off after rate_limit_exceeded for Retry-After, sending nothing before', async () => {
    fake.behaviour = 'rate-limited';
    const tiktok = collector();
    const id = tiktokIdAt('2026-06-01T00:00:00Z', 1);
    const [result] = await tiktok.collect([ref('tiktok', id)]);
    assert.equal(result!.status, 'unavailable');
    assert.deepEqual(result!.status === 'unavailable' && result!.retryAfter, new Date('2026-07-01T12:02:00.000Z'));
    fake.behaviour = 'normal';
    fake.videos.set(id, video());
    clock.advance(119_000);
    assert.equal((await tiktok.collect([ref('tiktok', id)]))[0]!.status, 'unavailable');
    assert.equal(fake.queries().length, 1);
    clock.advance(1_000);
    assert.equal((await tiktok.collect([ref('tiktok', id)]))[0]!.status, 'ok');
  });

  it('answers a Retry-After already due as unavailable (our limit) with no retry time, and blocks nothing', async () => {
    fake.behaviour = 'rate-limited';
    fake.retryAfter = '0';
    const tiktok = collector();
    const id = tiktokIdAt('2026-06-01T00:00:00Z', 1);
    const [result] = await tiktok.collect([ref('tiktok', id)]);
    assert.deepEqual(result, { status: 'unavailable', message: 'TikTok rate limit: rate_limit_exceeded: API rate limit exceeded', ownLimit: true });
    fake.behaviour = 'normal';
    fake.videos.set(id, video());
    assert.equal((await tiktok.collect([ref('tiktok', id)]))[0]!.status, 'ok');
    assert.equal(fake.queries().length, 2);
  });

  it('backs off until midnight UTC when the daily quota is spent', async () => {
    fake.behaviour = 'daily-quota';
    const [result] = await collector().collect([ref('tiktok', tiktokIdAt('2026-06-01T00:00:00Z', 1))]);
    assert.deepEqual(result!.status === 'unavailable' && result!.retryAfter, new Date('2026-07-02T00:00:00.000Z'));
  });

  it('answers unavailable on 5xx and on a timeout', async () => {
    const id = tiktokIdAt('2026-06-01T00:00:00Z', 1);
    fake.behaviour = 'server-error';
    assert.deepEqual((await collector().collect([ref('tiktok', id)]))[0], { status: 'unavailable', message: 'TikTok answered HTTP 500' });
    fake.behaviour = 'normal';
    fake.delayMs = 1_000;
    assert.equal((await collector({ fetchTimeoutMs: 100 }).collect([ref('tiktok', id)]))[0]!.status, 'unavailable');
  });

  it('answers invalid for a malformed body', async () => {
    fake.behaviour = 'malformed';
    assert.equal((await collector().collect([ref('tiktok', tiktokIdAt('2026-06-01T00:00:00Z', 1))]))[0]!.status, 'invalid');
  });
});

describe('TikTok creation-date windows', () => {
  const now = new Date(NOW);

  it('groups videos whose creation days fit one window, and pads the window by a day', () => {
    const refs = ['2026-01-01', '2026-01-20', '2026-01-28', '2026-01-29', '2026-06-30'].map((day, n) => ref('tiktok', tiktokIdAt(`${day}T12:00:00Z`, n)));
    const groups = groupByCreation(refs, 100, now);
    assert.deepEqual(groups.map((group) => group.length), [3, 1, 1]);
    assert.deepEqual(windowFor(groups[0]!, now), { startDate: '20251231', endDate: '20260129' });
    assert.deepEqual(windowFor(groups[2]!, now), { startDate: '20260629', endDate: '20260701' });
  });

  it('searches the most recent window for an id that carries no plausible date', () => {
    const groups = groupByCreation([ref('tiktok', '12345')], 100, now);
    assert.deepEqual(windowFor(groups[0]!, now), { startDate: '20260602', endDate: '20260701' });
  });
});
