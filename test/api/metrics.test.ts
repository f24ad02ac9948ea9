// GET /metrics: Prometheus text with request rates and latencies, projection lag, collection
// per platform and the scheduler's backlog.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { track, youtubeLink } from '../collect/rounds.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

test('metrics in Prometheus format, and no key in them', async () => {
  const org = await service.organization({ usd: '5' });
  await track(service, org.liveKey, youtubeLink(), 1);
  await track(service, org.liveKey, youtubeLink('410'), 1);
  await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
  service.clock.advance(HOUR_MS);
  const before = await service.app.inject({ url: '/metrics' });
  assert.match(before.body, /vidtrack_scheduler_backlog_slots 2/);
  service.metrics.recordRound('collect', (await collectDue(service.work)).perPlatform);
  await service.settle();

  const response = await service.app.inject({ url: '/metrics' });
  assert.equal(response.statusCode, 200);
  assert.match(response.headers['content-type'] as string, /text\/plain/);
  const text = response.body;
  assert.match(text, /vidtrack_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/usage",status="200"\} 1/);
  assert.match(text, /vidtrack_http_request_duration_seconds_count\{method="POST",route="\/api\/v1\/videos\/track",status="201"\} 2/);
  assert.match(text, /vidtrack_collection_events_total\{platform="youtube",event="SnapshotRecorded"\} 1/);
  assert.match(text, /vidtrack_collection_events_total\{platform="youtube",event="CollectionFailed"\} 1/);
  assert.match(text, /vidtrack_projection_lag_events\{projection="videos"\} 0/);
  assert.match(text, /vidtrack_projection_lag_seconds 0/);
  assert.match(text, /vidtrack_scheduler_backlog_slots 0/);
  assert.match(text, /vidtrack_process_resident_memory_bytes/);
  assert.ok(!text.includes(org.liveKey) && !text.includes('vt_live_'), 'no key in the metrics');
});
