// A scheduler back after hours down catches up on the slots it missed, one sweep after the other
// within moments. Those late slots are not "hourly attempts" (DESIGN §8): failing them must not
// add up to a terminal error.
import assert from 'node:assert/strict';
import { afterEach, it } from 'node:test';
import { HOUR_MS, type Clock } from '../../src/clock.ts';
import type { Collector, FetchResult, VideoRef } from '../../src/collect/collector.ts';
import { TwitterCollector } from '../../src/collect/collectors/twitter.ts';
import { Scheduler } from '../../src/collect/scheduler.ts';
import { simulate } from '../../src/collect/simulator.ts';
import { collectDue } from '../../src/collect/work.ts';
import { XFake } from '../support/fakes/x-fake.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { eventsOf, getVideo, recordedSlots, track, youtubeLink } from './rounds.ts';

const MINUTE_MS = 60_000;
let service: TestService | undefined;
let fake: XFake | undefined;
afterEach(async () => {
  await service?.close();
  await fake?.close();
  service = undefined;
  fake = undefined;
});

/** A live collector that answers like the simulator, except for the next `failuresLeft` calls. */
function blippingCollector() {
  const collector = {
    name: 'blipping',
    failuresLeft: 0,
    calls: 0,
    async collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
      collector.calls++;
      if (collector.failuresLeft > 0) {
        collector.failuresLeft--;
        return refs.map(() => ({ status: 'unavailable', message: 'HTTP 503' }));
      }
      return refs.map((ref) => ({ ...simulate(ref), provider: 'blipping' }) as FetchResult);
    },
  } satisfies Collector & Record<string, unknown>;
  return collector;
}

it('back after 4 h, three failed calls in a row during the catch-up miss three late slots; the video keeps monitoring', async () => {
  const collector = blippingCollector();
  service = await startTestService({ live: { youtube: collector }, fallbackToSimulator: false });
  const org = await service.organization({ usd: '5' });
  const id = await track(service, org.liveKey, youtubeLink());
  service.clock.advance(4 * HOUR_MS + 10 * MINUTE_MS);
  collector.failuresLeft = 3;
  // The drain of one round: sweep after sweep at the same service time.
  await new Scheduler(service.work, { timeScale: 1, onError: () => {} }).run('collect');

  assert.equal(collector.failuresLeft, 0, 'the three failing calls were made');
  const failures = await eventsOf(service, 'CollectionFailed', id);
  assert.deepEqual(
    failures.map((f) => [f.slot, f.reason, f.consecutiveFailures]),
    // Slots 1 and 2 are hours past; slot 3's hour has just ended, so it counts (as it would on time).
    [[1, 'unreachable', 0], [2, 'unreachable', 0], [3, 'unreachable', 1]],
  );
  assert.deepEqual(await recordedSlots(service, id), [0, 4]);
  assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
});

it('a platform that stays unreachable after the catch-up still errors, 1 h 50 min later: the slot whose hour just ended counts after one late attempt', async () => {
  const collector = blippingCollector();
  service = await startTestService({ live: { youtube: collector }, fallbackToSimulator: false });
  const org = await service.organization({ usd: '5' });
  const started = service.clock.now().getTime();
  const id = await track(service, org.liveKey, youtubeLink());
  collector.failuresLeft = Number.POSITIVE_INFINITY;
  service.clock.set(new Date(started + 4 * HOUR_MS + 10 * MINUTE_MS));
  await new Scheduler(service.work, { timeScale: 1, onError: () => {} }).run('collect');
  assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
  // Slot 4 is retried through its hour and counted when it ends, then slot 5.
  for (const hour of [5, 6]) {
    service.clock.set(new Date(started + hour * HOUR_MS));
    await collectDue(service.work);
  }
  const failures = await eventsOf(service, 'CollectionFailed', id);
  assert.deepEqual(
    failures.map((f) => [f.slot, f.consecutiveFailures]),
    [[1, 0], [2, 0], [3, 1], [4, 2], [5, 3]],
  );
  const video = await getVideo(service, org.liveKey, id);
  assert.equal(video.status, 'error');
  assert.equal(video.is_deleted, false);
});

it('back after 7 h, the catch-up uses up X\'s rate-limit window: the slots it then waits on are missed, the post keeps monitoring', async () => {
  fake = await XFake.start();
  let clockRef: Clock | null = null;
  const clock: Clock = { now: () => clockRef!.now() };
  const x = new TwitterCollector({ bearerToken: fake.bearerToken, baseUrl: fake.baseUrl, clock });
  service = await startTestService({ live: { twitter: x }, fallbackToSimulator: false });
  clockRef = service.clock;
  fake.tweets.set('1790000000000000001', {
    text: 'hello',
    author: { id: '42', username: 'someone', name: 'S' },
    publicMetrics: { retweet_count: 1, reply_count: 1, like_count: 1, quote_count: 0, bookmark_count: 0, impression_count: 10 },
  });
  const org = await service.organization({ usd: '5' });
  const id = await track(service, org.liveKey, 'https://x.com/someone/status/1790000000000000001');
  service.clock.advance(7 * HOUR_MS + MINUTE_MS);
  fake.remaining = 3; // what is left of the current window
  fake.resetAt = Math.floor(service.clock.now().getTime() / 1000) + 15 * 60;
  await new Scheduler(service.work, { timeScale: 1, onError: () => {} }).run('collect');

  assert.deepEqual(await recordedSlots(service, id), [0, 1, 2, 3], 'the window allowed three calls');
  const failures = await eventsOf(service, 'CollectionFailed', id);
  assert.deepEqual(failures.map((f) => f.slot), [4, 5, 6]);
  assert.ok(failures.every((f) => f.consecutiveFailures <= 1), JSON.stringify(failures.map((f) => f.consecutiveFailures)));
  assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
});
