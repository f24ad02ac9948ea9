import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

test('track, get and usage through the API', async () => {
  const org = await service.organization({ usd: '20' });
  const tracked = await service.app.inject({
    method: 'POST',
    url: '/api/v1/videos/track',
    headers: { 'x-api-key': org.liveKey },
    payload: { video_link: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', duration_days: 30 },
  });
  assert.equal(tracked.statusCode, 201, tracked.body);
  const body = tracked.json();
  assert.equal(body.estimated_cost, 10.8);
  const got = await service.app.inject({ url: `/api/v1/videos/${body.id}`, headers: { 'x-api-key': org.liveKey } });
  assert.equal(got.statusCode, 200, got.body);
  assert.equal(got.json().snapshots.length, 1);
  const usage = await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
  assert.deepEqual(usage.json(), {
    balance_usd: 20,
    total_snapshots: 1,
    active_videos: 1,
    uncharged_usage_usd: 0.015,
    total_charged_usd: 0,
    estimated_snapshots_remaining: 1333,
    cost_per_snapshot: 0.015,
  });
});
