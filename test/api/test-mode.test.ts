// Test keys: spec §5.2 (they work but do not charge) and DESIGN §8 (a separate test mode:
// only test-mode videos, the simulator, no charge, no 402 check).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chargeUsage, completeEnded } from '../../src/collect/work.ts';
import type { Collector } from '../../src/collect/collector.ts';
import { simulate } from '../../src/collect/simulator.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectStatus, newLink, passHours, SNAPSHOT_MICROS, tracked, usd } from './helpers.ts';

/** A live YouTube collector that answers like the simulator under another name. */
const liveYoutube: Collector = {
  name: 'youtube-live-fake',
  async collect(refs) {
    return refs.map((ref) => {
      const result = simulate(ref);
      return result.status === 'ok' ? { ...result, provider: 'youtube-live-fake' } : result;
    });
  },
};

let service: TestService;
before(async () => {
  service = await startTestService({ live: { youtube: liveYoutube } });
});
after(() => service.close());

async function org(usdAmount?: string) {
  const o = await service.organization({ usd: usdAmount });
  return { ...o, live: client(service, o.liveKey), test: client(service, o.testKey) };
}

describe('no balance needed, nothing charged', () => {
  test('a test key tracks with zero balance (no 402), where the live key gets 402', async () => {
    const o = await org();
    const body = await tracked(o.test, newLink(), 30);
    assert.equal(body.status, 'monitoring');
    assert.equal(body.estimated_cost, 10.8, 'the estimate is still shown');
    expectError(await o.live.track(newLink(), 30), 402, 'Insufficient balance');
  });

  test('test-mode snapshots never reach the live figures, and are never charged', async () => {
    const o = await org('5');
    const before = expectStatus(await o.live.usage(), 200);
    await tracked(o.test, newLink('tiktok'), 2);
    await tracked(o.test, newLink('youtube'), 1);
    await passHours(service, 5);
    await chargeUsage(service.work);
    await service.settle();
    const after = expectStatus(await o.live.usage(), 200);
    assert.deepEqual(after, before);
    assert.deepEqual(after, {
      balance_usd: 5,
      total_snapshots: 0,
      active_videos: 0,
      uncharged_usage_usd: 0,
      total_charged_usd: 0,
      estimated_snapshots_remaining: 333,
      cost_per_snapshot: 0.015,
    });
  });

  test('usage through the test key shows the test figures', async () => {
    const o = await org('5');
    await tracked(o.live, newLink('instagram'), 1);
    const a = await tracked(o.test, newLink('tiktok'), 2);
    await tracked(o.test, newLink('twitter'), 2);
    await passHours(service, 2); // live: 3 snapshots; test: 2 x 3
    expectStatus(await o.test.stop(a.id), 200);
    await chargeUsage(service.work);
    await service.settle();
    assert.deepEqual(expectStatus(await o.test.usage(), 200), {
      balance_usd: usd(5_000_000 - 3 * SNAPSHOT_MICROS),
      total_snapshots: 6,
      active_videos: 1,
      uncharged_usage_usd: 0,
      total_charged_usd: 0,
      estimated_snapshots_remaining: Math.floor((5_000_000 - 3 * SNAPSHOT_MICROS) / SNAPSHOT_MICROS),
      cost_per_snapshot: 0.015,
    });
    assert.deepEqual(expectStatus(await o.live.usage(), 200), {
      balance_usd: 4.955,
      total_snapshots: 3,
      active_videos: 1,
      uncharged_usage_usd: 0,
      total_charged_usd: 0.045,
      estimated_snapshots_remaining: 330,
      cost_per_snapshot: 0.015,
    });
  });

  test('a test video with no funds runs its whole period and is never paused', async () => {
    const o = await org();
    const v = await tracked(o.test, newLink(), 1);
    await passHours(service, 24);
    await completeEnded(service.work);
    await service.settle();
    const video = expectStatus(await o.test.video(v.id), 200);
    assert.equal(video.status, 'completed');
    assert.equal(video.snapshots.length, 24);
  });
});

describe('a world of its own', () => {
  test('a test key sees only test-mode videos, a live key only live ones', async () => {
    const o = await org('5');
    const live = await tracked(o.live, newLink(), 1);
    const testVideo = await tracked(o.test, newLink(), 1);
    assert.deepEqual(
      expectStatus(await o.test.list(), 200).videos.map((v: { id: string }) => v.id),
      [testVideo.id],
    );
    assert.deepEqual(
      expectStatus(await o.live.list(), 200).videos.map((v: { id: string }) => v.id),
      [live.id],
    );
    assert.deepEqual(expectError(await o.test.video(live.id), 404, 'Video not found'), { error: 'Video not found' });
    assert.deepEqual(expectError(await o.live.video(testVideo.id), 404, 'Video not found'), { error: 'Video not found' });
    expectError(await o.test.stop(live.id), 404, 'Video not found');
    expectError(await o.live.stop(testVideo.id), 404, 'Video not found');
    assert.equal(expectStatus(await o.live.video(live.id), 200).status, 'monitoring');
    assert.equal(expectStatus(await o.test.video(testVideo.id), 200).status, 'monitoring');
  });

  test('the same link in both modes is two videos; twice in test mode is a 409', async () => {
    const o = await org('5');
    const link = newLink('youtube');
    const live = await tracked(o.live, link, 1);
    const testVideo = await tracked(o.test, link, 1);
    assert.notEqual(live.id, testVideo.id);
    assert.equal(expectError(await o.test.track(link, 1), 409, 'Video is already being tracked').id, testVideo.id);
    assert.equal(expectError(await o.live.track(link, 1), 409, 'Video is already being tracked').id, live.id);
  });

  test('test mode collects from the simulator, live mode from the live collector', async () => {
    const o = await org('5');
    const live = await tracked(o.live, newLink('youtube'), 1);
    const testVideo = await tracked(o.test, newLink('youtube'), 1);
    await passHours(service, 1);
    const liveSnapshots = expectStatus(await o.live.video(live.id), 200).snapshots;
    const testSnapshots = expectStatus(await o.test.video(testVideo.id), 200).snapshots;
    assert.deepEqual(
      liveSnapshots.map((s: { provider: string }) => s.provider),
      ['youtube-live-fake', 'youtube-live-fake'],
    );
    assert.deepEqual(
      testSnapshots.map((s: { provider: string }) => s.provider),
      ['simulator', 'simulator'],
    );
  });

  test('the simulator rules hold for test keys', async () => {
    const o = await org();
    expectError(await o.test.track(newLink('tiktok', '404'), 1), 404, 'Video not found or is private');
    expectError(await o.test.track(newLink('tiktok', '500'), 1), 500, 'Failed to start monitoring - invalid response from tracking API');
    expectError(await o.test.track(newLink('tiktok', '503'), 1), 502, 'Failed to fetch video data from platform');
  });

  test('validation is the same for test keys', async () => {
    const o = await org();
    const body = expectError(await o.test.track(newLink(), 31), 400, 'Invalid request');
    assert.ok(Array.isArray(body.details));
    expectError(await o.test.list('platform=vimeo'), 400, 'Invalid platform');
  });
});
