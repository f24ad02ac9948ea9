// GET /videos: spec §4.2 and DESIGN §8 (invalid status or limit -> 400 Invalid request naming the field).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { PLATFORMS } from '../../src/domain/platform.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectInvalid, expectStatus, ISO_TIME, newLink, passHours, tracked } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function freshApi() {
  const org = await service.organization({ usd: '1000' });
  return client(service, org.testKey);
}

describe('fields', () => {
  test('each listed video has exactly the spec fields', async () => {
    const org = await service.organization({ usd: '100' });
    const api = client(service, org.liveKey);
    const link = newLink('tiktok');
    const created = await tracked(api, link, 3);
    await passHours(service, 12);
    const body = expectStatus(await api.list(), 200);
    assert.deepEqual(Object.keys(body).sort(), ['limit', 'next_cursor', 'total', 'videos']);
    assert.equal(body.total, 1);
    assert.equal(body.limit, 50);
    const [video] = body.videos;
    assert.deepEqual(Object.keys(video).sort(), [
      'created_at',
      'current_metadata',
      'days_remaining',
      'id',
      'job_id',
      'monitoring_duration_days',
      'monitoring_started',
      'platform',
      'status',
      'video_link',
    ]);
    assert.equal(video.id, created.id);
    assert.equal(video.job_id, created.job_id);
    assert.equal(video.video_link, link);
    assert.equal(video.platform, 'tiktok');
    assert.equal(video.status, 'monitoring');
    assert.equal(video.monitoring_duration_days, 3);
    assert.equal(video.days_remaining, 2.5);
    assert.match(video.monitoring_started, ISO_TIME);
    assert.match(video.created_at, ISO_TIME);
    assert.equal(video.created_at, created.created_at);
    assert.equal(typeof video.current_metadata, 'object');
    for (const key of ['title', 'creator', 'description']) assert.equal(typeof video.current_metadata[key], 'string', key);
  });

  test('an organization with no videos gets an empty list', async () => {
    const body = expectStatus(await (await freshApi()).list(), 200);
    assert.deepEqual(body, { videos: [], total: 0, limit: 50, next_cursor: null });
  });
});

describe('filters', () => {
  let api: ReturnType<typeof client>;
  const ids: Record<string, string[]> = {};
  const remember = (key: string, id: string) => (ids[key] ??= []).push(id);

  before(async () => {
    api = await freshApi();
    // two monitoring and one completed video per platform, and a cancelled youtube one
    for (const platform of PLATFORMS) {
      for (let i = 0; i < 3; i++) {
        const v = await tracked(api, newLink(platform), 2);
        remember(platform, v.id);
        if (i === 2) {
          expectStatus(await api.stop(v.id), 200);
          remember(`${platform}:completed`, v.id);
          remember('completed', v.id);
        } else {
          remember(`${platform}:monitoring`, v.id);
          remember('monitoring', v.id);
        }
      }
    }
    const cancelled = await tracked(api, newLink('youtube'), 2);
    await cancelVideo(service.store, service.clock, cancelled.id);
    await service.settle();
    remember('youtube', cancelled.id);
    remember('cancelled', cancelled.id);
    remember('youtube:cancelled', cancelled.id);
  });

  const idsOf = (body: Record<string, any>) => body.videos.map((v: { id: string }) => v.id).sort();

  test('no filter lists them all', async () => {
    const body = expectStatus(await api.list(), 200);
    assert.equal(body.total, 13);
    assert.equal(body.videos.length, 13);
  });

  test('by platform', async () => {
    for (const platform of PLATFORMS) {
      const body = expectStatus(await api.list(`platform=${platform}`), 200);
      assert.deepEqual(idsOf(body), [...ids[platform]!].sort(), platform);
      assert.equal(body.total, ids[platform]!.length);
      assert.ok(body.videos.every((v: { platform: string }) => v.platform === platform));
    }
  });

  test('by status', async () => {
    for (const status of ['monitoring', 'completed', 'cancelled'] as const) {
      const body = expectStatus(await api.list(`status=${status}`), 200);
      assert.deepEqual(idsOf(body), [...ids[status]!].sort(), status);
      assert.ok(body.videos.every((v: { status: string }) => v.status === status));
    }
    for (const status of ['paused', 'error']) assert.deepEqual(expectStatus(await api.list(`status=${status}`), 200).videos, []);
  });

  test('platform and status combine (AND)', async () => {
    const body = expectStatus(await api.list('platform=youtube&status=completed'), 200);
    assert.deepEqual(idsOf(body), [...ids['youtube:completed']!].sort());
    assert.equal(body.total, 1);
    const cancelled = expectStatus(await api.list('status=cancelled&platform=youtube'), 200);
    assert.deepEqual(idsOf(cancelled), ids['youtube:cancelled']);
    assert.equal(expectStatus(await api.list('platform=tiktok&status=cancelled'), 200).total, 0);
    assert.equal(expectStatus(await api.list('platform=instagram&status=monitoring&limit=1'), 200).total, 1);
  });

  test('completed videos show days_remaining 0; monitoring ones their whole period', async () => {
    const body = expectStatus(await api.list(), 200);
    for (const v of body.videos) {
      if (v.status === 'completed') assert.equal(v.days_remaining, 0);
      if (v.status === 'monitoring') assert.equal(v.days_remaining, 2);
    }
  });

  test('an unknown query parameter is ignored', async () => {
    // (`cursor` is known since cursor pagination: cursor.test.ts.)
    assert.equal(expectStatus(await api.list('offset=5&page=2'), 200).total, 13);
  });
});

describe('limit', () => {
  let api: ReturnType<typeof client>;
  before(async () => {
    api = await freshApi();
    const links = Array.from({ length: 101 }, () => newLink('twitter'));
    for (let i = 0; i < links.length; i += 10) await Promise.all(links.slice(i, i + 10).map((link) => tracked(api, link, 1)));
  });

  test('default 50', async () => {
    const body = expectStatus(await api.list(), 200);
    assert.equal(body.limit, 50);
    assert.equal(body.videos.length, 50);
    assert.equal(body.total, 50, 'total counts the videos in this response');
  });

  test('at most 100 per request', async () => {
    const body = expectStatus(await api.list('limit=100'), 200);
    assert.equal(body.limit, 100);
    assert.equal(body.videos.length, 100);
    assert.equal(body.total, 100);
    assert.equal(new Set(body.videos.map((v: { id: string }) => v.id)).size, 100);
  });

  test('any limit from 1 to 100 is applied and echoed', async () => {
    for (const limit of [1, 2, 37, 99]) {
      const body = expectStatus(await api.list(`limit=${limit}`), 200);
      assert.equal(body.limit, limit);
      assert.equal(body.videos.length, limit);
      assert.equal(body.total, limit);
    }
  });

  test('a limit above the number of videos', async () => {
    const small = await freshApi();
    await tracked(small, newLink(), 1);
    await tracked(small, newLink(), 1);
    const body = expectStatus(await small.list('limit=10'), 200);
    assert.equal(body.limit, 10);
    assert.equal(body.total, 2);
  });
});

describe('400', () => {
  let api: ReturnType<typeof client>;
  before(async () => {
    api = await freshApi();
  });

  test('Invalid platform, with valid_platforms', async () => {
    for (const platform of ['vimeo', 'YouTube', 'TIKTOK', 'x', '', 'youtube%20', '%00', 'tiktok,youtube']) {
      const body = expectError(await api.list(`platform=${platform}`), 400, 'Invalid platform');
      assert.deepEqual(body, { error: 'Invalid platform', valid_platforms: ['tiktok', 'youtube', 'instagram', 'twitter'] });
    }
  });

  test('an invalid status names status', async () => {
    for (const status of ['active', 'MONITORING', 'done', '', 'monitoring,completed', '1']) {
      const details = expectInvalid(await api.list(`status=${status}`), 'status');
      assert.deepEqual(details, [{ field: 'status', message: 'status must be one of: monitoring, completed, paused, error, cancelled' }], status);
    }
  });

  test('an invalid limit names limit', async () => {
    for (const limit of ['0', '101', 'abc', '-1', '1.5', '', '1e3', '1000000000000000000000', 'NaN']) {
      const details = expectInvalid(await api.list(`limit=${limit}`), 'limit');
      assert.ok(details.every((d) => d.field === 'limit'), limit);
    }
  });

  test('a repeated parameter is not taken as a valid value', async () => {
    expectInvalid(await api.list('limit=1&limit=2'), 'limit');
    expectInvalid(await api.list('status=monitoring&status=completed'), 'status');
    assert.equal((await api.list('platform=youtube&platform=tiktok')).statusCode, 400);
  });
});

test('a key lists only its own organization and mode', async () => {
  const a = await service.organization({ usd: '100' });
  const b = await service.organization({ usd: '100' });
  const aLive = await tracked(client(service, a.liveKey), newLink(), 1);
  const aTest = await tracked(client(service, a.testKey), newLink(), 1);
  const bLive = await tracked(client(service, b.liveKey), newLink(), 1);
  const listed = async (key: string) => expectStatus(await client(service, key).list(), 200).videos.map((v: { id: string }) => v.id);
  assert.deepEqual(await listed(a.liveKey), [aLive.id]);
  assert.deepEqual(await listed(a.testKey), [aTest.id]);
  assert.deepEqual(await listed(b.liveKey), [bLive.id]);
  assert.deepEqual(await listed(b.testKey), []);
});
