// Live-mode tracking through the API with a real collector wired in (YouTube, against its
// local fake server), and without credentials or fallback: the spec's answers at track time,
// and the provider named in each snapshot.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { HOUR_MS, systemClock } from '../../src/clock.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { collectDue } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';

async function trackThrough(service: TestService, key: string, videoLink: string) {
  const response = await service.app.inject({ method: 'POST', url: '/api/v1/videos/track', headers: { 'x-api-key': key }, payload: { video_link: videoLink, duration_days: 1 } });
  return { status: response.statusCode, body: response.json() };
}

describe('a live platform with its API collector', () => {
  let fake: YouTubeFake;
  let service: TestService;
  before(async () => {
    fake = await YouTubeFake.start();
    const youtube = new YouTubeCollector({ apiKey: fake.apiKey, baseUrl: fake.baseUrl, clock: systemClock });
    service = await startTestService({ live: { youtube }, fallbackToSimulator: false });
  });
  after(async () => {
    await service.close();
    await fake.close();
  });
  beforeEach(() => {
    fake.behaviour = 'normal';
  });

  it('tracks from the platform API, names the provider, and collects through it', async () => {
    fake.videos.set('dQw4w9WgXcQ', {
      title: 'Never Gonna Give You Up',
      channelTitle: 'Rick Astley',
      description: 'The official video',
      statistics: { viewCount: '1085567053', likeCount: '12479318', favoriteCount: '0', commentCount: '2003414' },
    });
    const org = await service.organization({ usd: '1' });
    const tracked = await trackThrough(service, org.liveKey, 'https://youtu.be/dQw4w9WgXcQ');
    assert.equal(tracked.status, 201, JSON.stringify(tracked.body));
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    const video = (await service.app.inject({ url: `/api/v1/videos/${tracked.body.id}`, headers: { 'x-api-key': org.liveKey } })).json();
    assert.equal(video.snapshots.length, 2);
    assert.deepEqual(
      video.snapshots.map((s: { provider: string; views: string; comments: string }) => [s.provider, s.views, s.comments]),
      [
        ['youtube-data-api-v3', '1085567053', '2003414'],
        ['youtube-data-api-v3', '1085567053', '2003414'],
      ],
    );
    assert.deepEqual(video.current_metadata, { title: 'Never Gonna Give You Up', creator: 'Rick Astley', description: 'The official video' });
  });

  it('answers 404 for a video the platform does not return, 502 when it fails, 500 when its answer is malformed', async () => {
    const org = await service.organization({ usd: '1' });
    const missing = await trackThrough(service, org.liveKey, 'https://youtu.be/AAAAAAAAAAA');
    assert.deepEqual([missing.status, missing.body.error], [404, 'Video not found or is private']);
    fake.videos.set('BBBBBBBBBBB', { title: 't', channelTitle: 'c', description: 'd', statistics: { viewCount: '1', likeCount: '1', commentCount: '1' } });
    fake.behaviour = 'server-error';
    const down = await trackThrough(service, org.liveKey, 'https://youtu.be/BBBBBBBBBBB');
    assert.deepEqual([down.status, down.body.error], [502, 'Failed to fetch video data from platform']);
    fake.behaviour = 'malformed';
    const garbled = await trackThrough(service, org.liveKey, 'https://youtu.be/BBBBBBBBBBB');
    assert.deepEqual([garbled.status, garbled.body.error], [500, 'Failed to start monitoring - invalid response from tracking API']);
  });

  it('without credentials and without the fallback, live tracking answers 502 saying what to set; test keys still use the simulator', async () => {
    const org = await service.organization({ usd: '1' });
    const tiktok = await trackThrough(service, org.liveKey, 'https://www.tiktok.com/@someone/video/7170520270497680683');
    assert.equal(tiktok.status, 502);
    assert.equal(tiktok.body.error, 'Failed to fetch video data from platform');
    assert.match(tiktok.body.details[0].message, /TIKTOK_CLIENT_KEY and TIKTOK_CLIENT_SECRET/);
    const test = await trackThrough(service, org.testKey, 'https://www.tiktok.com/@someone/video/7170520270497680683');
    assert.equal(test.status, 201);
    const video = (await service.app.inject({ url: `/api/v1/videos/${test.body.id}`, headers: { 'x-api-key': org.testKey } })).json();
    assert.equal(video.snapshots[0].provider, 'simulator');
  });
});
