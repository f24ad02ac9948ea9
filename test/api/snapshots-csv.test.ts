// GET /videos/{id}/snapshots.csv: the snapshots the JSON answer holds, as CSV, under the same
// access rules (403 for another organization's video, 404 for an unknown one or another mode's).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectStatus, newLink, passHours, tracked } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

describe('GET /videos/{id}/snapshots.csv', () => {
  test('holds a header and one row per snapshot, matching the JSON answer', async () => {
    const org = await service.organization({ usd: '10' });
    const api = client(service, org.liveKey);
    const created = await tracked(api, newLink('youtube'), 1);
    await passHours(service, 3);
    const video = expectStatus(await api.video(created.id), 200);
    const csv = await api.get(`/videos/${encodeURIComponent(created.id)}/snapshots.csv`);
    assert.equal(csv.statusCode, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    assert.match(String(csv.headers['content-disposition']), /^attachment; filename="[\w-]+-snapshots\.csv"$/);
    assert.ok(csv.headers['x-ratelimit-limit'], 'counted like every request with a key');
    const [header, ...rows] = csv.body.trim().split('\r\n');
    assert.equal(header, 'snapshot_id,snapshot_time,views,likes,comments,shares,saves,retweets,replies,provider');
    assert.equal(rows.length, video.snapshots.length);
    assert.equal(rows.length, 4);
    const first = video.snapshots[0];
    assert.equal(rows[0], `${first.snapshot_id},${first.snapshot_time},${first.views},${first.likes},${first.comments},,,,,${first.provider}`);
  });

  test('answers as GET /videos/{id} does for a video that is not the caller\'s', async () => {
    const owner = await service.organization({ usd: '10' });
    const other = await service.organization({ usd: '10' });
    const created = await tracked(client(service, owner.liveKey), newLink('youtube'), 1);
    expectError(await client(service, other.liveKey).get(`/videos/${encodeURIComponent(created.id)}/snapshots.csv`), 403, 'Access denied');
    expectError(await client(service, owner.testKey).get(`/videos/${encodeURIComponent(created.id)}/snapshots.csv`), 404, 'Video not found');
    expectError(await client(service, owner.liveKey).get('/videos/no-such-video/snapshots.csv'), 404, 'Video not found');
  });
});
