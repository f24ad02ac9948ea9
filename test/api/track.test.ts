// POST /videos/track: spec §4.1, §7, §8 and DESIGN §8 (201, 409, 502, Idempotency-Key, 402 on available funds).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { trackVideo, type TrackDeps, type TrackOutcome } from '../../src/commands/track.ts';
import { parseVideoLink, type ParsedLink } from '../../src/domain/links.ts';
import type { EventData, EventStore, ExpectedRevision } from '../../src/eventstore/port.ts';
import { stopVideo } from '../../src/commands/video-commands.ts';
import type { Platform } from '../../src/domain/platform.ts';
import { CLAIM_GRACE_MS } from '../../src/domain/tracking-claim.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, costOfDays, expectError, expectInvalid, expectStatus, ISO_TIME, newLink, passHours, platformId, tracked, usd } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function fundedApi(usdAmount: string | null = '1000') {
  const org = await service.organization({ usd: usdAmount ?? undefined });
  return { org, api: client(service, org.liveKey), testApi: client(service, org.testKey) };
}

describe('success', () => {
  test('201 with exactly the spec fields', async () => {
    const { api } = await fundedApi();
    const link = newLink('youtube');
    const response = await api.track(link, 7);
    const body = expectStatus(response, 201);
    assert.deepEqual(Object.keys(body).sort(), [
      'created_at',
      'days_remaining',
      'estimated_cost',
      'id',
      'job_id',
      'monitoring_duration_days',
      'platform',
      'status',
      'video_link',
    ]);
    assert.equal(typeof body.id, 'string');
    assert.ok(body.id.length > 0);
    assert.equal(typeof body.job_id, 'string');
    assert.ok(body.job_id.length > 0);
    assert.notEqual(body.job_id, body.id);
    assert.equal(body.video_link, link);
    assert.equal(body.platform, 'youtube');
    assert.equal(body.status, 'monitoring');
    assert.equal(body.monitoring_duration_days, 7);
    assert.equal(body.days_remaining, 7);
    assert.equal(body.estimated_cost, 2.52);
    assert.match(body.created_at, ISO_TIME);
    assert.equal(body.created_at, service.clock.now().toISOString());
    assert.match(String(response.headers['content-type']), /^application\/json/);
  });

  test('estimated_cost = duration_days x 24 x 0.015 exactly, for every duration 1..30', async () => {
    const { api } = await fundedApi('1000');
    const known: Record<number, number> = { 1: 0.36, 7: 2.52, 10: 3.6, 14: 5.04, 30: 10.8 };
    for (let days = 1; days <= 30; days++) {
      const body = await tracked(api, newLink('tiktok'), days);
      assert.equal(body.estimated_cost, costOfDays(days), `${days} days`);
      if (known[days] !== undefined) assert.equal(body.estimated_cost, known[days], `${days} days`);
      assert.equal(body.monitoring_duration_days, days);
      assert.equal(body.days_remaining, days);
    }
  });

  test('every link shape of spec §1 is accepted and its platform detected', async () => {
    const { api } = await fundedApi();
    const yt = () => platformId('youtube');
    const num = () => platformId('tiktok');
    const shapes: Array<[string, Platform]> = [
      [`https://www.tiktok.com/@some.user/video/${num()}`, 'tiktok'],
      [`https://vm.tiktok.com/ZMabc${num().slice(-6)}/`, 'tiktok'],
      [`https://vt.tiktok.com/ZSdef${num().slice(-6)}/`, 'tiktok'],
      [`https://www.tiktok.com/t/ZTghi${num().slice(-6)}/`, 'tiktok'],
      [`https://www.youtube.com/watch?v=${yt()}`, 'youtube'],
      [`https://youtu.be/${yt()}`, 'youtube'],
      [`https://www.youtube.com/embed/${yt()}`, 'youtube'],
      [`https://www.instagram.com/p/${platformId('instagram')}/`, 'instagram'],
      [`https://www.instagram.com/reel/${platformId('instagram')}/`, 'instagram'],
      [`https://twitter.com/someone/status/${platformId('twitter')}`, 'twitter'],
      [`https://x.com/someone/status/${platformId('twitter')}`, 'twitter'],
    ];
    for (const [link, platform] of shapes) {
      const body = await tracked(api, link, 1);
      assert.equal(body.platform, platform, link);
      assert.equal(body.video_link, link);
    }
  });

  test('the first snapshot is collected at once, and the video can be read back', async () => {
    const { api } = await fundedApi();
    const body = await tracked(api, newLink('instagram'), 2);
    const video = expectStatus(await api.video(body.id), 200);
    assert.equal(video.id, body.id);
    assert.equal(video.job_id, body.job_id);
    assert.equal(video.status, 'monitoring');
    assert.equal(video.snapshots.length, 1);
  });
});

describe('400 Invalid request', () => {
  test('missing fields', async () => {
    const { api } = await fundedApi();
    expectInvalid(await api.post('/videos/track', { duration_days: 7 }), 'video_link');
    expectInvalid(await api.post('/videos/track', { video_link: newLink() }), 'duration_days');
    const both = expectInvalid(await api.post('/videos/track', {}), 'video_link');
    assert.deepEqual(both.map((d) => d.field).sort(), ['duration_days', 'video_link'], 'every missing field is named');
  });

  test('wrong types', async () => {
    const { api } = await fundedApi();
    for (const days of ['7', 7.5, true, null, [7], { days: 7 }, '', 'seven']) {
      expectInvalid(await api.track(newLink(), days), 'duration_days');
    }
    for (const link of [123, true, null, ['https://youtu.be/dQw4w9WgXcQ'], { url: 'x' }]) {
      expectInvalid(await api.track(link, 7), 'video_link');
    }
  });

  test('duration_days out of range', async () => {
    const { api } = await fundedApi();
    for (const days of [0, 31, -1, 100, 2 ** 53, -0.5, 1e21]) {
      const details = expectInvalid(await api.track(newLink(), days), 'duration_days');
      assert.ok(details.every((d) => d.field === 'duration_days'));
    }
  });

  test('bad JSON, empty body, a JSON array, a JSON scalar', async () => {
    const { api } = await fundedApi();
    const json = { 'content-type': 'application/json' };
    expectInvalid(await api.post('/videos/track', '{"video_link": "https://youtu.be/dQw4w9WgXcQ", ', json), 'body');
    expectInvalid(await api.post('/videos/track', '{video_link: 1}', json), 'body');
    expectInvalid(await api.post('/videos/track', '', json), 'body');
    expectInvalid(await api.post('/videos/track'), 'body');
    expectInvalid(await api.post('/videos/track', '[]', json), 'body');
    expectInvalid(await api.post('/videos/track', JSON.stringify([{ video_link: newLink(), duration_days: 1 }]), json), 'body');
    expectInvalid(await api.post('/videos/track', 'null', json), 'body');
    expectInvalid(await api.post('/videos/track', '"text"', json), 'body');
    expectInvalid(await api.post('/videos/track', '42', json), 'body');
  });

  test('a body over the size limit (1 MiB)', async () => {
    const { api } = await fundedApi();
    const huge = JSON.stringify({ video_link: newLink(), duration_days: 1, pad: 'x'.repeat(1024 * 1024) });
    expectInvalid(await api.post('/videos/track', huge, { 'content-type': 'application/json' }), 'body');
    assert.equal(expectStatus(await api.list(), 200).total, 0);
  });

  test('a body that is not JSON', async () => {
    const { api } = await fundedApi();
    expectInvalid(await api.post('/videos/track', 'video_link=x&duration_days=1', { 'content-type': 'application/x-www-form-urlencoded' }), 'body');
    expectInvalid(await api.post('/videos/track', 'hello', { 'content-type': 'text/plain' }), 'body');
  });

  test('unknown link shapes and non-URL text name video_link', async () => {
    const { api } = await fundedApi();
    const yt = platformId('youtube');
    const bad = [
      '',
      '   ',
      'hello world',
      'not a url',
      'youtube.com/watch?v=' + yt,
      'www.youtube.com/watch?v=' + yt,
      `ftp://www.youtube.com/watch?v=${yt}`,
      `javascript:alert(1)`,
      'https://vimeo.com/123456789',
      'https://www.youtube.com/',
      'https://www.youtube.com/channel/UC1234567890',
      `https://www.youtube.com/watch?list=${yt}`,
      'https://www.youtube.com/watch?v=short',
      'https://www.tiktok.com/@someone',
      'https://www.tiktok.com/@someone/video/notanumber',
      'https://www.instagram.com/someone/',
      'https://www.instagram.com/stories/someone/123/',
      'https://twitter.com/someone',
      'https://x.com/someone/likes',
      'https://x.com/someone/status/abc',
      `https://user:pass@www.youtube.com/watch?v=${yt}`,
      `https://www.youtube.com:8443/watch?v=${yt}`,
      `https://evil.example/www.youtube.com/watch?v=${yt}`,
      `https://www.youtube.com.evil.example/watch?v=${yt}`,
    ];
    for (const link of bad) {
      const details = expectInvalid(await api.track(link, 3), 'video_link');
      assert.ok(details.every((d) => d.field === 'video_link'), link);
    }
    expectStatus(await api.usage(), 200);
    assert.equal(expectStatus(await api.list(), 200).total, 0, 'nothing was created');
  });
});

describe('402 Insufficient balance', () => {
  test('balance 1, 7 days: required = estimated_cost - balance, exact', async () => {
    const { api } = await fundedApi('1');
    const response = await api.track(newLink(), 7);
    const body = expectError(response, 402, 'Insufficient balance');
    assert.deepEqual(body, { error: 'Insufficient balance', balance: 1, estimated_cost: 2.52, required: 1.52 });
  });

  test('no funds at all', async () => {
    const { api } = await fundedApi(null);
    const body = expectError(await api.track(newLink(), 30), 402, 'Insufficient balance');
    assert.deepEqual(body, { error: 'Insufficient balance', balance: 0, estimated_cost: 10.8, required: 10.8 });
  });

  test('a balance one micro-dollar short', async () => {
    const { api } = await fundedApi('2.519999');
    const body = expectError(await api.track(newLink(), 7), 402, 'Insufficient balance');
    assert.deepEqual(body, { error: 'Insufficient balance', balance: 2.519999, estimated_cost: 2.52, required: usd(1) });
  });

  test('a balance exactly equal to estimated_cost is enough', async () => {
    const { api } = await fundedApi('0.36');
    await tracked(api, newLink(), 1);
  });

  test('compares balance minus uncharged usage', async () => {
    const { api } = await fundedApi('0.36');
    await tracked(api, newLink(), 1); // its first snapshot (0.015) is recorded, not yet charged
    const usage = expectStatus(await api.usage(), 200);
    assert.equal(usage.balance_usd, 0.36);
    assert.equal(usage.uncharged_usage_usd, 0.015);
    const body = expectError(await api.track(newLink(), 1), 402, 'Insufficient balance');
    assert.deepEqual(body, { error: 'Insufficient balance', balance: 0.345, estimated_cost: 0.36, required: 0.015 });
  });

  test('a 402 creates nothing', async () => {
    const { api } = await fundedApi('1');
    expectError(await api.track(newLink(), 30), 402, 'Insufficient balance');
    assert.equal(expectStatus(await api.list(), 200).total, 0);
    const usage = expectStatus(await api.usage(), 200);
    assert.equal(usage.total_snapshots, 0);
    assert.equal(usage.uncharged_usage_usd, 0);
  });
});

describe('platform answers', () => {
  test('404 Video not found or is private (id ending 404), on every platform', async () => {
    const { api } = await fundedApi();
    for (const platform of ['youtube', 'tiktok', 'instagram', 'twitter'] as const) {
      const body = expectError(await api.track(newLink(platform, '404'), 1), 404, 'Video not found or is private');
      assert.equal(body.error, 'Video not found or is private');
    }
    assert.equal(expectStatus(await api.list(), 200).total, 0);
    assert.equal(expectStatus(await api.usage(), 200).total_snapshots, 0);
  });

  test('500 Failed to start monitoring - invalid response from tracking API (id ending 500)', async () => {
    const { api } = await fundedApi();
    expectError(await api.track(newLink('twitter', '500'), 1), 500, 'Failed to start monitoring - invalid response from tracking API');
    assert.equal(expectStatus(await api.list(), 200).total, 0);
  });

  test('502 Failed to fetch video data from platform (id ending 503)', async () => {
    const { api } = await fundedApi();
    expectError(await api.track(newLink('tiktok', '503'), 1), 502, 'Failed to fetch video data from platform');
    assert.equal(expectStatus(await api.list(), 200).total, 0);
    assert.equal(expectStatus(await api.usage(), 200).uncharged_usage_usd, 0);
  });

  test('a failed track does not block a later one of the same link', async () => {
    const { api } = await fundedApi('1');
    const link = newLink();
    expectError(await api.track(link, 30), 402, 'Insufficient balance');
    await tracked(api, link, 1);
  });
});

describe('links the stores cannot hold', () => {
  test('a lone surrogate or NUL anywhere in a well-formed link is a 400 naming video_link, and the clean link then tracks', async () => {
    const { api } = await fundedApi();
    const id = platformId('youtube');
    const clean = `https://youtu.be/${id}`;
    for (const hostile of [`${clean}#\ud800`, `${clean}?t=\udfff`, `${clean}?t=1\u0000`, `https://www.tiktok.com/@a\u0000b/video/7123456789012345678`, `${clean}#${'x'.repeat(3000)}`]) {
      const details = expectInvalid(await api.track(hostile, 1), 'video_link');
      assert.deepEqual(details.map((d) => d.field), ['video_link'], JSON.stringify(hostile).slice(0, 60));
    }
    await tracked(api, clean, 1);
  });

  test('a video the database refuses to write leaves the link free: 503, then the same link tracks (no 409 naming a video that does not exist)', async () => {
    const { api } = await fundedApi();
    const link = newLink();
    // A real refusal by PostgreSQL, of this one video's events only.
    await service.db.pool.query(`
      CREATE FUNCTION refuse_marked() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.stream_id LIKE 'video-%' AND NEW.data->>'videoLink' = '${link}' THEN RAISE EXCEPTION 'refused for the test'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_marked BEFORE INSERT ON es.events FOR EACH ROW EXECUTE FUNCTION refuse_marked();`);
    try {
      expectError(await api.track(link, 1), 503, 'Service temporarily unavailable');
    } finally {
      await service.db.pool.query(`DROP TRIGGER refuse_marked ON es.events; DROP FUNCTION refuse_marked()`);
    }
    await tracked(api, link, 1);
  });
});

describe('a track whose append committed before the connection dropped', () => {
  test('is tracked, and its link stays claimed by it (no release of a video that exists)', async () => {
    const org = await service.organization({ usd: '10' });
    const inner = service.store;
    // The append commits, then the answer is lost, as when the connection drops after COMMIT.
    const dropping: EventStore = Object.assign(Object.create(inner) as EventStore, {
      append: async (streamId: string, events: readonly EventData[], expected: ExpectedRevision) => {
        const result = await inner.append(streamId, events, expected);
        if (streamId.startsWith('video-')) throw new Error('Connection terminated unexpectedly');
        return result;
      },
    });
    const link = parseVideoLink(newLink()) as ParsedLink;
    const outcome = await trackVideo(
      { store: dropping, collectors: service.collectors, clock: service.clock, availableFunds: async () => 10_000_000 },
      { orgId: org.orgId, keyId: org.liveKeyId, mode: 'live', link, durationDays: 1 },
    );
    assert.equal(outcome.kind, 'tracked');
    await service.settle();
    const again = expectError(await client(service, org.liveKey).track(link.videoLink, 1), 409, 'Video is already being tracked');
    assert.equal(again.id, (outcome as { videoId: string }).videoId);
  });
});

describe('a claim whose video is not written yet', () => {
  const request = (org: { orgId: string; liveKeyId: string }, link: ParsedLink) => ({ orgId: org.orgId, keyId: org.liveKeyId, mode: 'live' as const, link, durationDays: 1 });
  const depsOf = (store: EventStore, wall?: ManualClock): TrackDeps => ({ store, collectors: service.collectors, clock: service.clock, wall, availableFunds: async () => 10_000_000 });

  test('holds the link against a second track however much service time passes (TIME_SCALE): 409', async () => {
    const org = await service.organization({ usd: '10' });
    const link = parseVideoLink(newLink()) as ParsedLink;
    const inner = service.store;
    let second: TrackOutcome | undefined;
    // Between the first track's claim and its video: 11 service minutes pass (0.2 s of wall
    // time at TIME_SCALE=3600), and a second track of the link arrives.
    const slowVideo: EventStore = Object.assign(Object.create(inner) as EventStore, {
      append: async (streamId: string, events: readonly EventData[], expected: ExpectedRevision) => {
        if (streamId.startsWith('video-') && !second) {
          service.clock.advance(CLAIM_GRACE_MS + 60_000);
          second = await trackVideo(depsOf(inner), request(org, link));
        }
        return inner.append(streamId, events, expected);
      },
    });
    const first = await trackVideo(depsOf(slowVideo), request(org, link));
    assert.equal(first.kind, 'tracked');
    assert.deepEqual(second, { kind: 'duplicate', videoId: (first as { videoId: string }).videoId });
  });

  test('lapses after CLAIM_GRACE_MS of wall time when its video never appears', async () => {
    const org = await service.organization({ usd: '10' });
    const link = parseVideoLink(newLink()) as ParsedLink;
    const inner = service.store;
    const wall = new ManualClock(new Date());
    // The video append fails and its outcome cannot be read: the claim is left to lapse.
    const down: EventStore = Object.assign(Object.create(inner) as EventStore, {
      append: async (streamId: string, events: readonly EventData[], expected: ExpectedRevision) => {
        if (streamId.startsWith('video-')) throw new Error('Connection terminated unexpectedly');
        return inner.append(streamId, events, expected);
      },
      readStream: async (streamId: string) => {
        if (streamId.startsWith('video-')) throw new Error('Connection terminated unexpectedly');
        return inner.readStream(streamId);
      },
    });
    await assert.rejects(trackVideo(depsOf(down, wall), request(org, link)), /Connection terminated/);
    wall.advance(CLAIM_GRACE_MS - 1_000);
    assert.equal((await trackVideo(depsOf(inner, wall), request(org, link))).kind, 'duplicate', 'still within the grace');
    wall.advance(1_000);
    assert.equal((await trackVideo(depsOf(inner, wall), request(org, link))).kind, 'tracked');
  });
});

describe('409 Video is already being tracked', () => {
  test('the same link again, while monitoring', async () => {
    const { api } = await fundedApi();
    const link = newLink('tiktok');
    const first = await tracked(api, link, 3);
    const body = expectError(await api.track(link, 5), 409, 'Video is already being tracked');
    assert.deepEqual(body, { error: 'Video is already being tracked', id: first.id });
    assert.equal(expectStatus(await api.list(), 200).total, 1);
  });

  test('another link shape of the same video', async () => {
    const { api } = await fundedApi();
    const id = platformId('youtube');
    const first = await tracked(api, `https://www.youtube.com/watch?v=${id}`, 1);
    for (const other of [`https://youtu.be/${id}`, `https://www.youtube.com/embed/${id}`, `https://youtube.com/watch?v=${id}&t=42s`]) {
      const body = expectError(await api.track(other, 1), 409, 'Video is already being tracked');
      assert.equal(body.id, first.id, other);
    }
    const tweet = platformId('twitter');
    const firstTweet = await tracked(api, `https://twitter.com/someone/status/${tweet}`, 1);
    assert.equal(expectError(await api.track(`https://x.com/someone/status/${tweet}`, 1), 409, 'Video is already being tracked').id, firstTweet.id);
    const post = platformId('instagram');
    const firstPost = await tracked(api, `https://www.instagram.com/p/${post}/`, 1);
    assert.equal(expectError(await api.track(`https://www.instagram.com/reel/${post}/`, 1), 409, 'Video is already being tracked').id, firstPost.id);
  });

  test('while paused', async () => {
    // 0.50 USD pays for both first snapshots and 15 more hours of both videos, then one of them pauses.
    const { api } = await fundedApi('0.5');
    const a = await tracked(api, newLink(), 1);
    const b = await tracked(api, newLink(), 1);
    await passHours(service, 16);
    const statuses = await Promise.all([a, b].map(async (v) => expectStatus(await api.video(v.id), 200)));
    const paused = statuses.find((v) => v.status === 'paused');
    assert.ok(paused, `one video should be paused: ${statuses.map((v) => v.status).join(', ')}`);
    const body = expectError(await api.track(paused.video_link, 1), 409, 'Video is already being tracked');
    assert.equal(body.id, paused.id);
  });

  test('after a stop, the same link is tracked again under a new id', async () => {
    const { api } = await fundedApi();
    const link = newLink('instagram');
    const first = await tracked(api, link, 2);
    expectStatus(await api.stop(first.id), 200);
    const second = await tracked(api, link, 2);
    assert.notEqual(second.id, first.id);
    assert.notEqual(second.job_id, first.job_id);
    assert.equal(expectStatus(await api.video(first.id), 200).status, 'completed');
    assert.equal(expectStatus(await api.video(second.id), 200).status, 'monitoring');
    assert.equal(expectStatus(await api.list(), 200).total, 2);
    // and the new one blocks a third
    assert.equal(expectError(await api.track(link, 1), 409, 'Video is already being tracked').id, second.id);
  });

  test('after the video ended in error, the same link is tracked again under a new id', async () => {
    const { api } = await fundedApi();
    const link = newLink('youtube', '410');
    const first = await tracked(api, link, 2);
    await passHours(service, 3);
    assert.equal(expectStatus(await api.video(first.id), 200).status, 'error');
    const second = await tracked(api, link, 2);
    assert.notEqual(second.id, first.id);
  });

  test('other organizations and the other key mode are not duplicates', async () => {
    const a = await fundedApi();
    const b = await fundedApi();
    const link = newLink('twitter');
    const inA = await tracked(a.api, link, 1);
    const inB = await tracked(b.api, link, 1);
    const inATest = await tracked(a.testApi, link, 1);
    assert.equal(new Set([inA.id, inB.id, inATest.id]).size, 3);
    assert.equal(expectError(await a.testApi.track(link, 1), 409, 'Video is already being tracked').id, inATest.id);
  });

  test('two tracks of one link at the same moment: one 201, one 409 naming it', async () => {
    const { api } = await fundedApi();
    const link = newLink('tiktok');
    const responses = await Promise.all([api.track(link, 1), api.track(link, 1), api.track(link, 1)]);
    const created = responses.filter((r) => r.statusCode === 201);
    const conflicts = responses.filter((r) => r.statusCode === 409);
    assert.equal(created.length, 1, responses.map((r) => r.body).join('\n'));
    assert.equal(conflicts.length, 2, responses.map((r) => r.body).join('\n'));
    for (const c of conflicts) assert.equal(c.json().id, created[0]!.json().id);
    assert.equal(expectStatus(await api.usage(), 200).total_snapshots, 1);
  });
});

describe('Idempotency-Key', () => {
  test('a repeat returns the same response and creates nothing', async () => {
    const { api } = await fundedApi('100');
    const link = newLink('youtube');
    const headers = { 'idempotency-key': 'order-42' };
    const first = await api.track(link, 7, headers);
    const second = await api.track(link, 7, headers);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(second.statusCode, 201, second.body);
    assert.deepEqual(second.json(), first.json());
    const usage = expectStatus(await api.usage(), 200);
    assert.equal(usage.active_videos, 1);
    assert.equal(usage.total_snapshots, 1);
    assert.equal(usage.uncharged_usage_usd, 0.015);
    const list = expectStatus(await api.list(), 200);
    assert.equal(list.total, 1);
    assert.equal(list.videos[0].id, first.json().id);
  });

  test('a repeat after time passed and the video stopped still answers with the first video', async () => {
    const { api } = await fundedApi('100');
    const link = newLink('tiktok');
    const headers = { 'idempotency-key': 'retry-after-stop' };
    const first = expectStatus(await api.track(link, 2, headers), 201);
    await passHours(service, 2);
    expectStatus(await api.stop(first.id), 200);
    const again = expectStatus(await api.track(link, 2, headers), 201);
    assert.deepEqual(again, first);
    assert.equal(expectStatus(await api.list(), 200).total, 1);
    assert.equal(expectStatus(await api.usage(), 200).total_snapshots, 3);
  });

  test('concurrent repeats create one video', async () => {
    const { api } = await fundedApi('100');
    const link = newLink('instagram');
    const headers = { 'idempotency-key': 'burst' };
    const responses = await Promise.all([1, 2, 3, 4].map(() => api.track(link, 1, headers)));
    for (const r of responses) assert.equal(r.statusCode, 201, r.body);
    assert.equal(new Set(responses.map((r) => r.json().id)).size, 1);
    assert.equal(expectStatus(await api.list(), 200).total, 1);
    assert.equal(expectStatus(await api.usage(), 200).total_snapshots, 1);
  });

  test('a repeat answers with the first response even if its body differs, and tracks nothing else', async () => {
    const { api } = await fundedApi('100');
    const headers = { 'idempotency-key': 'changed-body' };
    const first = expectStatus(await api.track(newLink('youtube'), 3, headers), 201);
    const other = newLink('tiktok');
    assert.deepEqual(expectStatus(await api.track(other, 9, headers), 201), first);
    assert.equal(expectStatus(await api.list(), 200).total, 1);
    await tracked(api, other, 1); // that link was never claimed
  });

  test('the same key sent at once with two links tracks one of them and leaves the other free', async () => {
    const { api } = await fundedApi('100');
    const [a, b] = [newLink('youtube'), newLink('youtube')];
    const headers = { 'idempotency-key': 'two-links-at-once' };
    const [first, second] = await Promise.all([api.track(a, 1, headers), api.track(b, 1, headers)]);
    const video = expectStatus(first, 201);
    assert.deepEqual(expectStatus(second, 201), video);
    assert.equal(expectStatus(await api.list(), 200).total, 1);
    // Both tracks claimed their link for the one video; the link it was not written for stays free.
    assert.ok([a, b].includes(video.video_link), video.video_link);
    const other = video.video_link === a ? b : a;
    await tracked(api, other, 1);
  });

  test('a different key for the same link is a duplicate, not a repeat', async () => {
    const { api } = await fundedApi('100');
    const link = newLink();
    const first = expectStatus(await api.track(link, 1, { 'idempotency-key': 'a' }), 201);
    assert.equal(expectError(await api.track(link, 1, { 'idempotency-key': 'b' }), 409, 'Video is already being tracked').id, first.id);
  });

  test('the same key in another organization or key mode is another request', async () => {
    const a = await fundedApi('100');
    const b = await fundedApi('100');
    const headers = { 'idempotency-key': 'shared-key' };
    const inA = expectStatus(await a.api.track(newLink(), 1, headers), 201);
    const inB = expectStatus(await b.api.track(newLink(), 1, headers), 201);
    const inATest = expectStatus(await a.testApi.track(newLink(), 1, headers), 201);
    assert.equal(new Set([inA.id, inB.id, inATest.id]).size, 3);
  });

  test('a key that is empty or too long is 400', async () => {
    const { api } = await fundedApi('100');
    expectInvalid(await api.track(newLink(), 1, { 'idempotency-key': '' }), 'Idempotency-Key');
    expectInvalid(await api.track(newLink(), 1, { 'idempotency-key': 'k'.repeat(256) }), 'Idempotency-Key');
  });
});

describe('the spec checks in the order a client can act on them', () => {
  test('a 400 comes before a 402', async () => {
    const { api } = await fundedApi(null);
    expectInvalid(await api.track('not a link', 7), 'video_link');
    expectInvalid(await api.track(newLink(), 31), 'duration_days');
  });

  test('a stopped video, tracked again, costs a new estimate and a new first snapshot', async () => {
    const { org, api } = await fundedApi('1');
    const link = newLink();
    const first = await tracked(api, link, 1);
    await stopVideo(service.store, service.clock, first.id);
    await service.settle();
    const second = await tracked(api, link, 1);
    assert.notEqual(second.id, first.id);
    assert.equal(expectStatus(await client(service, org.liveKey).usage(), 200).uncharged_usage_usd, 0.03);
  });
});
