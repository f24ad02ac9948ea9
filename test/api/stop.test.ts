// POST /videos/{id}/stop: spec §3 and §4.4 (snapshots kept, no further snapshots or charges,
// 400 from any state but monitoring, 404, 403).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { chargeUsage, collectDue, completeEnded } from '../../src/collect/work.ts';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { API, client, expectError, expectStatus, newLink, passHours, SNAPSHOT_MICROS, tracked, usd } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

async function liveApi(usdAmount = '100') {
  const org = await service.organization({ usd: usdAmount });
  return { org, api: client(service, org.liveKey) };
}

describe('stopping a monitoring video', () => {
  test('answers with exactly the spec fields', async () => {
    const { api } = await liveApi();
    const link = newLink('tiktok');
    const created = await tracked(api, link, 7);
    const body = expectStatus(await api.stop(created.id), 200);
    assert.deepEqual(body, {
      success: true,
      id: created.id,
      job_id: created.job_id,
      video_link: link,
      previous_status: 'monitoring',
      new_status: 'completed',
    });
  });

  test('the video is completed, with days_remaining 0, and its snapshots stay readable', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink('twitter'), 3);
    await passHours(service, 4);
    const before = expectStatus(await api.video(created.id), 200);
    assert.equal(before.snapshots.length, 5);
    expectStatus(await api.stop(created.id), 200);
    const after = expectStatus(await api.video(created.id), 200);
    assert.equal(after.status, 'completed');
    assert.equal(after.days_remaining, 0);
    assert.deepEqual(after.snapshots, before.snapshots);
    const listed = expectStatus(await api.list('status=completed'), 200);
    assert.deepEqual(
      listed.videos.map((v: { id: string }) => v.id),
      [created.id],
    );
  });

  test('no further snapshots or charges after the stop', async () => {
    const { api } = await liveApi('10');
    const created = await tracked(api, newLink('youtube'), 2);
    await passHours(service, 2); // 3 snapshots
    expectStatus(await api.stop(created.id), 200);
    for (let hour = 0; hour < 5; hour++) {
      service.clock.advance(HOUR_MS);
      const round = await collectDue(service.work);
      assert.equal(round.claimed, 0, 'the scheduler finds nothing due');
    }
    await service.settle();
    const video = expectStatus(await api.video(created.id), 200);
    assert.equal(video.snapshots.length, 3);
    await chargeUsage(service.work);
    await service.settle();
    const usage = expectStatus(await api.usage(), 200);
    assert.equal(usage.total_snapshots, 3);
    assert.equal(usage.active_videos, 0);
    assert.equal(usage.total_charged_usd, usd(3 * SNAPSHOT_MICROS));
    assert.equal(usage.uncharged_usage_usd, 0);
    assert.equal(usage.balance_usd, usd(10_000_000 - 3 * SNAPSHOT_MICROS));
    // and the end of the original period does not change it
    service.clock.advance(2 * 24 * HOUR_MS);
    await completeEnded(service.work);
    await collectDue(service.work);
    await service.settle();
    assert.equal(expectStatus(await api.video(created.id), 200).snapshots.length, 3);
  });

  test('a stop needs no body, and tolerates an empty JSON object or a Content-Type with no body', async () => {
    const { api, org } = await liveApi();
    const a = await tracked(api, newLink(), 1);
    const b = await tracked(api, newLink(), 1);
    const c = await tracked(api, newLink(), 1);
    expectStatus(await api.post(`/videos/${a.id}/stop`), 200);
    expectStatus(await api.post(`/videos/${b.id}/stop`, {}), 200);
    const withHeader = await service.app.inject({
      method: 'POST',
      url: `${API}/videos/${c.id}/stop`,
      headers: { 'x-api-key': org.liveKey, 'content-type': 'application/json' },
    });
    expectStatus(withHeader, 200);
  });
});

describe('400 Video is not being monitored', () => {
  test('a second stop', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink(), 1);
    expectStatus(await api.stop(created.id), 200);
    const body = expectError(await api.stop(created.id), 400, 'Video is not being monitored');
    assert.deepEqual(body, { error: 'Video is not being monitored' });
  });

  test('a video that completed naturally', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink(), 1);
    await passHours(service, 24);
    await completeEnded(service.work);
    await service.settle();
    assert.equal(expectStatus(await api.video(created.id), 200).status, 'completed');
    expectError(await api.stop(created.id), 400, 'Video is not being monitored');
  });

  test('a paused video', async () => {
    const { api } = await liveApi('0.5');
    const a = await tracked(api, newLink(), 1);
    const b = await tracked(api, newLink(), 1);
    await passHours(service, 16);
    const paused = (await Promise.all([a, b].map(async (v) => expectStatus(await api.video(v.id), 200)))).find((v) => v.status === 'paused');
    assert.ok(paused, 'one video is paused for want of funds');
    expectError(await api.stop(paused.id), 400, 'Video is not being monitored');
    assert.equal(expectStatus(await api.video(paused.id), 200).status, 'paused');
  });

  test('a video in error', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink('instagram', '410'), 2);
    await passHours(service, 3);
    assert.equal(expectStatus(await api.video(created.id), 200).status, 'error');
    expectError(await api.stop(created.id), 400, 'Video is not being monitored');
  });

  test('a cancelled video', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink(), 1);
    await cancelVideo(service.store, service.clock, created.id);
    await service.settle();
    assert.equal(expectStatus(await api.video(created.id), 200).status, 'cancelled');
    expectError(await api.stop(created.id), 400, 'Video is not being monitored');
  });

  test('two stops at the same moment: one succeeds, the other is 400', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink(), 1);
    const responses = await Promise.all([api.stop(created.id), api.stop(created.id)]);
    const codes = responses.map((r) => r.statusCode).sort();
    assert.deepEqual(codes, [200, 400], responses.map((r) => r.body).join('\n'));
  });
});

describe('404 and 403', () => {
  test('404 Video not found for an unknown id', async () => {
    const { api } = await liveApi();
    for (const id of [randomUUID(), 'nope']) {
      assert.deepEqual(expectError(await api.stop(id), 404, 'Video not found'), { error: 'Video not found' });
    }
  });

  test("403 Access denied for another organization's video, which keeps monitoring", async () => {
    const owner = await liveApi();
    const other = await liveApi();
    const created = await tracked(owner.api, newLink(), 1);
    assert.deepEqual(expectError(await other.api.stop(created.id), 403, 'Access denied'), { error: 'Access denied' });
    expectError(await client(service, other.org.testKey).stop(created.id), 403, 'Access denied');
    assert.equal(expectStatus(await owner.api.video(created.id), 200).status, 'monitoring');
  });

  test('401 without a key, and the video keeps monitoring', async () => {
    const { api } = await liveApi();
    const created = await tracked(api, newLink(), 1);
    expectError(await client(service).stop(created.id), 401, 'API key required');
    assert.equal(expectStatus(await api.video(created.id), 200).status, 'monitoring');
  });
});
