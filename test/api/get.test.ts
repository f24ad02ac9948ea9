// GET /videos/{id}: spec §2.1, §2.2, §3, §4.3 and DESIGN §8 (403 for another organization,
// twitter fields, missing metrics omitted, the error state and is_deleted).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { completeEnded, resumeFunded } from '../../src/collect/work.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import type { Platform } from '../../src/domain/platform.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, DECIMAL, expectError, expectStatus, ISO_TIME, newLink, passHours, tracked } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function liveApi(usd = '100') {
  const org = await service.organization({ usd });
  return client(service, org.liveKey);
}

const METRICS: Record<Platform, string[]> = {
  tiktok: ['comments', 'likes', 'saves', 'shares', 'views'],
  youtube: ['comments', 'likes', 'views'],
  instagram: ['comments', 'likes', 'saves'],
  // DESIGN §8: comments = replies, shares = retweets, and retweets and replies themselves.
  twitter: ['comments', 'likes', 'replies', 'retweets', 'shares', 'views'],
};
const SNAPSHOT_FIELDS = ['id', 'provider', 'snapshot_id', 'snapshot_time'];

describe('a tracked video', () => {
  test('has every spec field, with the right types', async () => {
    const api = await liveApi();
    const link = newLink('youtube');
    const started = service.clock.now().toISOString();
    const created = await tracked(api, link, 5);
    const video = expectStatus(await api.video(created.id), 200);
    assert.deepEqual(Object.keys(video).sort(), [
      'created_at',
      'current_metadata',
      'days_remaining',
      'id',
      'is_deleted',
      'job_id',
      'last_updated',
      'monitoring_duration_days',
      'monitoring_started',
      'platform',
      'snapshots',
      'status',
      'video_link',
    ]);
    assert.equal(video.id, created.id);
    assert.equal(video.job_id, created.job_id);
    assert.equal(video.video_link, link);
    assert.equal(video.platform, 'youtube');
    assert.equal(video.status, 'monitoring');
    assert.equal(video.monitoring_started, started);
    assert.equal(video.monitoring_duration_days, 5);
    assert.equal(video.days_remaining, 5);
    assert.equal(video.is_deleted, false);
    assert.equal(video.created_at, created.created_at);
    assert.match(video.last_updated, ISO_TIME);
    assert.deepEqual(Object.keys(video.current_metadata).sort(), ['creator', 'description', 'title']);
    for (const value of Object.values(video.current_metadata)) assert.equal(typeof value, 'string');
    assert.ok(Array.isArray(video.snapshots));
    assert.equal(video.snapshots.length, 1);
    assert.equal(video.snapshots[0].snapshot_time, started, 'the first snapshot is taken at once');
  });

  test('days_remaining counts down and may be fractional', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink('tiktok'), 7);
    await passHours(service, 12);
    assert.equal(expectStatus(await api.video(created.id), 200).days_remaining, 6.5);
    await passHours(service, 6);
    assert.equal(expectStatus(await api.video(created.id), 200).days_remaining, 6.25);
  });

  test('last_updated follows the newest snapshot', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink(), 2);
    await passHours(service, 3);
    const video = expectStatus(await api.video(created.id), 200);
    assert.equal(video.last_updated, video.snapshots.at(-1).snapshot_time);
  });
});

describe('snapshots', () => {
  for (const platform of ['tiktok', 'youtube', 'instagram', 'twitter'] as const) {
    test(`${platform}: one per hour, ascending, metrics as decimal strings, only the platform's metrics`, async () => {
      const api = await liveApi();
      const start = service.clock.now().getTime();
      const created = await tracked(api, newLink(platform), 1);
      await passHours(service, 5);
      const video = expectStatus(await api.video(created.id), 200);
      assert.equal(video.snapshots.length, 6);
      video.snapshots.forEach((s: Record<string, string>, i: number) => {
        assert.deepEqual(Object.keys(s).sort(), [...SNAPSHOT_FIELDS, ...METRICS[platform]].sort(), `${platform} snapshot ${i}`);
        assert.equal(s.snapshot_time, new Date(start + i * HOUR_MS).toISOString());
        assert.equal(typeof s.id, 'string');
        assert.equal(typeof s.snapshot_id, 'string');
        assert.ok(s.provider && typeof s.provider === 'string');
        for (const metric of METRICS[platform]) {
          assert.equal(typeof s[metric], 'string', `${metric} is a string`);
          assert.match(s[metric]!, DECIMAL, `${metric} is a decimal integer`);
        }
        if (platform === 'twitter') {
          assert.equal(s.comments, s.replies);
          assert.equal(s.shares, s.retweets);
        }
      });
      const times = video.snapshots.map((s: { snapshot_time: string }) => Date.parse(s.snapshot_time));
      assert.deepEqual(times, [...times].sort((a, b) => a - b));
      assert.equal(new Set(video.snapshots.map((s: { id: string }) => s.id)).size, 6);
      assert.equal(new Set(video.snapshots.map((s: { snapshot_id: string }) => s.snapshot_id)).size, 6);
      // the simulator's counts grow
      const firstLikes = BigInt(video.snapshots[0].likes);
      const lastLikes = BigInt(video.snapshots.at(-1).likes);
      assert.ok(lastLikes >= firstLikes);
    });
  }

  test('a 1-day video completes with exactly 24 hourly snapshots and days_remaining 0', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink('instagram'), 1);
    await passHours(service, 24);
    await completeEnded(service.work);
    await service.settle();
    const video = expectStatus(await api.video(created.id), 200);
    assert.equal(video.status, 'completed');
    assert.equal(video.days_remaining, 0);
    assert.equal(video.snapshots.length, 24);
    const usage = expectStatus(await api.usage(), 200);
    assert.equal(usage.total_snapshots, 24);
    assert.equal(usage.uncharged_usage_usd, created.estimated_cost, 'the estimate was exact');
    assert.equal(usage.active_videos, 0);
  });
});

describe('the paused state', () => {
  test('a video the organization cannot pay for pauses, and resumes after a deposit; its period keeps running', async () => {
    const org = await service.organization({ usd: '0.5' });
    const api = client(service, org.liveKey);
    const a = await tracked(api, newLink(), 1);
    const b = await tracked(api, newLink(), 1);
    await passHours(service, 16);
    const videos = await Promise.all([a, b].map(async (v) => expectStatus(await api.video(v.id), 200)));
    const paused = videos.find((v) => v.status === 'paused');
    assert.ok(paused, videos.map((v) => v.status).join());
    assert.equal(paused.days_remaining, 0.3333, 'the period keeps running while paused');
    const snapshotsWhenPaused = paused.snapshots.length;
    await passHours(service, 1); // and now the other one cannot be paid either
    assert.equal(expectStatus(await api.video(paused.id), 200).snapshots.length, snapshotsWhenPaused, 'no collection while paused');
    assert.deepEqual(
      expectStatus(await api.list('status=paused'), 200).videos.map((v: { id: string }) => v.id).sort(),
      [a.id, b.id].sort(),
    );

    await deposit(service.store, service.clock, org.orgId, 1_000_000, 'top-up');
    await service.settle();
    await resumeFunded(service.work);
    await service.settle();
    const resumed = expectStatus(await api.video(paused.id), 200);
    assert.equal(resumed.status, 'monitoring');
    assert.equal(resumed.days_remaining, 0.2917);
    assert.equal(expectStatus(await api.list('status=monitoring'), 200).total, 2);
    await passHours(service, 1);
    assert.equal(expectStatus(await api.video(paused.id), 200).snapshots.length, snapshotsWhenPaused + 1);
  });
});

describe('the error state', () => {
  test('a video deleted on the platform ends in error after 3 failed hours, with is_deleted', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink('tiktok', '410'), 3);
    await passHours(service, 2);
    assert.equal(expectStatus(await api.video(created.id), 200).status, 'monitoring');
    await passHours(service, 1);
    const video = expectStatus(await api.video(created.id), 200);
    assert.equal(video.status, 'error');
    assert.equal(video.is_deleted, true);
    assert.equal(video.snapshots.length, 1, 'the snapshot taken before is kept');
    const frozen = video.days_remaining;
    assert.ok(frozen > 0 && frozen < 3);
    await passHours(service, 2);
    assert.equal(expectStatus(await api.video(created.id), 200).days_remaining, frozen, 'an ended video no longer counts down');
  });
});

describe('errors', () => {
  test('404 Video not found for an unknown id', async () => {
    const api = await liveApi();
    for (const id of [randomUUID(), 'abc', '0', 'job_123', ' ', 'null', 'undefined']) {
      const body = expectError(await api.video(id), 404, 'Video not found');
      assert.deepEqual(body, { error: 'Video not found' });
    }
  });

  test('ids the service could never have issued are 404 too, not a 400 or a 5xx', async () => {
    const api = await liveApi();
    for (const id of ['\u0000', 'a\u0000b', 'x'.repeat(201), 'x'.repeat(1_000), 'é', '😀', '../../etc/passwd', '%00', 'a b']) {
      assert.deepEqual(expectError(await api.video(id), 404, 'Video not found'), { error: 'Video not found' }, JSON.stringify(id.slice(0, 20)));
      expectError(await api.stop(id), 404, 'Video not found');
    }
  });

  test('a URL that cannot be routed is 400 Invalid request naming the url', async () => {
    const api = await liveApi();
    for (const path of ['/videos/%', '/videos/%E0%A4%A', '/videos/%ED%A0%80', `/videos/${'x'.repeat(1_001)}`]) {
      const response = await api.get(path);
      const body = expectError(response, 400, 'Invalid request');
      assert.deepEqual(
        (body.details as Array<{ field: string }>).map((d) => d.field),
        ['url'],
        path.slice(0, 30),
      );
    }
  });

  test('a job_id is not a video id', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink(), 1);
    expectError(await api.video(created.job_id), 404, 'Video not found');
  });

  test("403 Access denied for another organization's video, whichever key", async () => {
    const owner = await service.organization({ usd: '100' });
    const other = await service.organization({ usd: '100' });
    const live = await tracked(client(service, owner.liveKey), newLink(), 1);
    const test = await tracked(client(service, owner.testKey), newLink(), 1);
    for (const key of [other.liveKey, other.testKey]) {
      for (const id of [live.id, test.id]) {
        const body = expectError(await client(service, key).video(id), 403, 'Access denied');
        assert.deepEqual(body, { error: 'Access denied' });
      }
    }
  });

  test('401 before anything else', async () => {
    const api = await liveApi();
    const created = await tracked(api, newLink(), 1);
    expectError(await client(service).video(created.id), 401, 'API key required');
    expectError(await client(service).video(randomUUID()), 401, 'API key required');
  });
});
