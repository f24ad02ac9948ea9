// Platform answers no store can hold, arriving through a real collector (YouTube, against its
// local fake server) in the middle of a large batch: NUL and lone surrogates in text are
// cleaned, a count beyond bigint is a malformed answer (500 at track, a retried and then
// failed slot while tracking), and none of them stops the other videos or the read models.
// Also a client's link holding such characters: 400 naming video_link, and nothing claimed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HOUR_MS, systemClock } from '../../src/clock.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { collectDue } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { YouTubeFake, type FakeYouTubeVideo } from '../support/fakes/youtube-fake.ts';
import { eventsOf } from './rounds.ts';

const VIDEOS = 200;
const idOf = (i: number) => `u${String(i).padStart(10, '0')}`;
const clean = (i: number): FakeYouTubeVideo => ({
  title: `Video ${i}`,
  channelTitle: 'Channel',
  description: 'About it',
  statistics: { viewCount: String(1000 + i), likeCount: '10', commentCount: '1' },
});

async function trackThrough(service: TestService, key: string, videoLink: string) {
  const response = await service.app.inject({ method: 'POST', url: '/api/v1/videos/track', headers: { 'x-api-key': key }, payload: { video_link: videoLink, duration_days: 1 } });
  return { status: response.statusCode, body: response.json() };
}

describe('unstorable platform answers and links', () => {
  let fake: YouTubeFake;
  let service: TestService;
  before(async () => {
    fake = await YouTubeFake.start();
    const youtube = new YouTubeCollector({ apiKey: fake.apiKey, baseUrl: fake.baseUrl, clock: systemClock });
    service = await startTestService({ live: { youtube }, fallbackToSimulator: false });
  });
  after(async () => {
    await service?.close();
    await fake?.close();
  });

  it(`one odd answer among ${VIDEOS} videos: the others get their snapshot, text is cleaned, a bigint-busting count is retried then failed`, async () => {
    const org = await service.organization({ usd: '100' });
    const ids: string[] = [];
    for (let i = 0; i < VIDEOS; i++) fake.videos.set(idOf(i), clean(i));
    for (let start = 0; start < VIDEOS; start += 20) {
      const tracked = await Promise.all(Array.from({ length: 20 }, (_, k) => trackThrough(service, org.liveKey, `https://youtu.be/${idOf(start + k)}`)));
      for (const t of tracked) {
        assert.equal(t.status, 201, JSON.stringify(t.body));
        ids.push(t.body.id);
      }
    }
    // Hour 1: three videos in the middle of the batch answer what no store can hold.
    const nul = 97;
    const surrogate = 100;
    const huge = 103;
    fake.videos.set(idOf(nul), { ...clean(nul), title: 'Nul\u0000 title' });
    fake.videos.set(idOf(surrogate), { ...clean(surrogate), description: 'lone \ud800 surrogate', channelTitle: '\udc00Channel' });
    fake.videos.set(idOf(huge), { ...clean(huge), statistics: { viewCount: '99999999999999999999', likeCount: '1', commentCount: '1' } });

    const started = service.clock.now().getTime();
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    await service.settle();

    const snapshots = await eventsOf(service, 'SnapshotRecorded');
    const slot1 = new Set(snapshots.filter((s) => s.slot === 1).map((s) => s.videoId));
    assert.equal(slot1.size, VIDEOS - 1, 'every video but the one with the oversized count has its hour-1 snapshot');
    assert.ok(!slot1.has(ids[huge]));

    const read = async (i: number) => (await service.app.inject({ url: `/api/v1/videos/${ids[i]}`, headers: { 'x-api-key': org.liveKey } })).json();
    assert.deepEqual((await read(nul)).current_metadata, { title: 'Nul title', creator: 'Channel', description: 'About it' });
    assert.deepEqual((await read(surrogate)).current_metadata, { title: `Video ${surrogate}`, creator: 'Channel', description: 'lone  surrogate' });
    assert.equal((await read(0)).snapshots.length, 2, 'the read models keep projecting');
    assert.equal((await read(huge)).snapshots.length, 1);
    assert.deepEqual(await eventsOf(service, 'CollectionFailed'), [], 'an unreadable answer is retried within its hour, not failed at once');

    // Retried on its own, a few minutes later, while its hour lasts.
    const before = fake.requests.length;
    service.clock.advance(10 * 60_000);
    await collectDue(service.work);
    assert.deepEqual(fake.idsPerRequest().slice(before), [[idOf(huge)]]);

    // Its hour over, still unreadable: the slot is a failed hour, and the video goes on.
    service.clock.set(new Date(started + 2 * HOUR_MS));
    await collectDue(service.work);
    await service.settle();
    const failures = await eventsOf(service, 'CollectionFailed', ids[huge]);
    assert.deepEqual(failures.map((f) => [f.slot, f.reason]), [[1, 'unreachable']]);
    assert.match(failures[0]!.message, /viewCount is not an integer from 0 to 9223372036854775807/);
    assert.equal(new Set((await eventsOf(service, 'SnapshotRecorded')).filter((s) => s.slot === 2).map((s) => s.videoId)).size, VIDEOS - 1);
  });

  it('at track time: text is cleaned (201), an oversized count is the spec 500', async () => {
    const org = await service.organization({ usd: '5' });
    fake.videos.set('TTTTTTTTTTT', { ...clean(1), title: '\u0000\ud800Title\udfff' });
    const cleaned = await trackThrough(service, org.liveKey, 'https://youtu.be/TTTTTTTTTTT');
    assert.equal(cleaned.status, 201, JSON.stringify(cleaned.body));
    assert.equal((await eventsOf(service, 'VideoTracked', cleaned.body.id))[0]!.metadata.title, 'Title');

    fake.videos.set('CCCCCCCCCCC', { ...clean(1), statistics: { viewCount: '9223372036854775808' } });
    const huge = await trackThrough(service, org.liveKey, 'https://youtu.be/CCCCCCCCCCC');
    assert.deepEqual([huge.status, huge.body.error], [500, 'Failed to start monitoring - invalid response from tracking API']);
  });

  it('a link with a lone surrogate or NUL anywhere is a 400 naming video_link, and the clean link then tracks', async () => {
    const org = await service.organization({ usd: '5' });
    fake.videos.set('dQw4w9WgXcQ', clean(7));
    for (const link of ['https://youtu.be/dQw4w9WgXcQ#\ud800', 'https://youtu.be/dQw4w9WgXcQ?si=a\u0000b', 'https://youtu.be/dQw4w9WgXcQ#' + 'x'.repeat(5000)]) {
      const refused = await trackThrough(service, org.liveKey, link);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error, 'Invalid request');
      assert.equal(refused.body.details[0].field, 'video_link');
    }
    const tracked = await trackThrough(service, org.liveKey, 'https://youtu.be/dQw4w9WgXcQ');
    assert.equal(tracked.status, 201, JSON.stringify(tracked.body));
  });
});
