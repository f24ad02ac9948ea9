// A limit on our own use of a platform (the daily quota spent, a rate-limit window used up) holds
// the collectors back until its reset. The slots it costs are missed: no snapshot, no charge, and
// never counted toward `error` (only the platform's answers and failures to reach it are).
import assert from 'node:assert/strict';
import { afterEach, it } from 'node:test';
import { HOUR_MS, type Clock } from '../../src/clock.ts';
import { TwitterCollector } from '../../src/collect/collectors/twitter.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { XFake } from '../support/fakes/x-fake.ts';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { eventsOf, getUsage, getVideo, recordedSlots, track } from './rounds.ts';

const MINUTE_MS = 60_000;
let service: TestService | undefined;
let fakes: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await service?.close();
  await Promise.all(fakes.map((fake) => fake.close()));
  service = undefined;
  fakes = [];
});

/** A clock for a collector built before the service whose clock it reads. */
function lateClock(): { clock: Clock; use(clock: Clock): void } {
  let target: Clock | null = null;
  return { clock: { now: () => target!.now() }, use: (clock) => (target = clock) };
}

/** Collects every 5 minutes of service time from `fromMinute` to `toMinute` after `started`. */
async function collectEvery5Minutes(started: number, fromMinute: number, toMinute: number): Promise<void> {
  for (let minute = fromMinute; minute <= toMinute; minute += 5) {
    service!.clock.set(new Date(started + minute * MINUTE_MS));
    await collectDue(service!.work);
  }
}

it('YouTube\'s daily quota spent at 09:00 Pacific: 4 hours later the video still monitors, its missed hours uncharged', async () => {
  const fake = await YouTubeFake.start();
  fakes.push(fake);
  const late = lateClock();
  const youtube = new YouTubeCollector({ apiKey: fake.apiKey, baseUrl: fake.baseUrl, clock: late.clock });
  service = await startTestService({ start: '2026-07-01T16:00:00.000Z', live: { youtube }, fallbackToSimulator: false });
  late.use(service.clock);
  fake.videos.set('dQw4w9WgXcQ', { title: 't', channelTitle: 'c', description: 'd', statistics: { viewCount: '1', likeCount: '1', commentCount: '1' } });
  const org = await service.organization({ usd: '5' });
  const started = service.clock.now().getTime();
  const id = await track(service, org.liveKey, 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', 7);
  fake.behaviour = 'quota-exceeded';

  await collectEvery5Minutes(started, 60, 5 * 60);

  assert.equal(fake.requests.length, 2, 'the track call, then one call that found the quota spent: none until the reset');
  const failures = await eventsOf(service, 'CollectionFailed', id);
  assert.deepEqual(
    failures.map((f) => [f.slot, f.reason, f.consecutiveFailures]),
    [[1, 'own_limit', 0], [2, 'own_limit', 0], [3, 'own_limit', 0], [4, 'own_limit', 0]],
  );
  assert.deepEqual(await recordedSlots(service, id), [0]);
  assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
  await chargeUsage(service.work);
  assert.equal((await getUsage(service, org.liveKey)).total_charged_usd, 0.015, 'only slot 0 is charged');
});

it('X answering 429 hour after hour: the post still monitors, and is collected again once X lets us', async () => {
  const fake = await XFake.start();
  fakes.push(fake);
  const late = lateClock();
  const x = new TwitterCollector({ bearerToken: fake.bearerToken, baseUrl: fake.baseUrl, clock: late.clock });
  service = await startTestService({ live: { twitter: x }, fallbackToSimulator: false });
  late.use(service.clock);
  fake.tweets.set('1790000000000000001', {
    text: 'hello',
    author: { id: '42', username: 'someone', name: 'S' },
    publicMetrics: { retweet_count: 1, reply_count: 1, like_count: 1, quote_count: 0, bookmark_count: 0, impression_count: 10 },
  });
  const org = await service.organization({ usd: '5' });
  const started = service.clock.now().getTime();
  const id = await track(service, org.liveKey, 'https://x.com/someone/status/1790000000000000001');
  fake.remaining = 0;
  fake.resetAt = 0; // a reset already past blocks nothing (Backoff): each retry asks, and X refuses again

  await collectEvery5Minutes(started, 60, 4 * 60);

  assert.ok(fake.requests.length > 4, `asked again at the retries (${fake.requests.length} requests)`);
  const failures = await eventsOf(service, 'CollectionFailed', id);
  assert.deepEqual(failures.map((f) => [f.slot, f.reason, f.consecutiveFailures]), [[1, 'own_limit', 0], [2, 'own_limit', 0], [3, 'own_limit', 0]]);
  assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');

  fake.remaining = 300;
  await collectEvery5Minutes(started, 4 * 60 + 30, 4 * 60 + 30);
  assert.deepEqual(await recordedSlots(service, id), [0, 4]);
});
