// What collection does when the platform says no: deleted, unreachable, private; and videos
// that have ended are left alone.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import type { Collector, FetchResult, VideoRef } from '../../src/collect/collector.ts';
import { simulate } from '../../src/collect/simulator.ts';
import { chargeUsage, collectDue, completeEnded } from '../../src/collect/work.ts';
import { cancelVideo } from '../../src/commands/video-commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { collectHours, eventsOf, getUsage, getVideo, recordedSlots, track, youtubeLink } from './rounds.ts';

let service: TestService;
afterEach(() => service.close());

const MINUTE_MS = 60_000;

/** A live YouTube collector that answers like the simulator until told to fail. */
function flakyCollector() {
  const calls: VideoRef[] = [];
  const collector = {
    failure: null as FetchResult | null,
    calls,
    name: 'flaky',
    async collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
      calls.push(...refs);
      return refs.map((ref) => collector.failure ?? { ...simulate(ref), provider: 'flaky' } as FetchResult);
    },
  } satisfies Collector & Record<string, unknown>;
  return collector;
}

/** A service whose live YouTube videos go through a flaky collector, and one such video tracked. */
async function trackedThroughFlaky() {
  const collector = flakyCollector();
  service = await startTestService({ live: { youtube: collector }, fallbackToSimulator: false });
  const org = await service.organization({ usd: '1' });
  const started = service.clock.now().getTime();
  const id = await track(service, org.liveKey, youtubeLink());
  return { collector, org, started, id };
}

const unreachable: FetchResult = { status: 'unavailable', message: 'connect ETIMEDOUT' };

describe('a video deleted on the platform (id ending 410)', () => {
  it('gets its first snapshot, then after 3 failed hours goes to error with is_deleted; failed hours cost nothing', async () => {
    service = await startTestService();
    const org = await service.organization({ usd: '1' });
    const id = await track(service, org.liveKey, youtubeLink('410'));
    assert.equal((await getVideo(service, org.liveKey, id)).snapshots.length, 1);

    await collectHours(service, 2, () => collectDue(service.work));
    let video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'monitoring', 'two failed hours are not yet an error');
    assert.equal(video.is_deleted, false);

    service.clock.advance(HOUR_MS);
    const third = await collectDue(service.work);
    assert.equal(third.counts.get('VideoErrored'), 1);
    video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'error');
    assert.equal(video.is_deleted, true);
    assert.equal(video.snapshots.length, 1);

    const failures = await eventsOf(service, 'CollectionFailed', id);
    assert.deepEqual(
      failures.map((f) => [f.slot, f.reason, f.consecutiveFailures]),
      [
        [1, 'deleted', 1],
        [2, 'deleted', 2],
        [3, 'deleted', 3],
      ],
    );

    // An errored video is terminal: no collection, no completion, and only slot 0 is charged.
    await collectHours(service, 24, () => collectDue(service.work));
    assert.equal((await completeEnded(service.work)).counts.size, 0);
    assert.deepEqual(await recordedSlots(service, id), [0]);
    assert.equal((await eventsOf(service, 'CollectionFailed', id)).length, 3);
    await chargeUsage(service.work);
    const usage = await getUsage(service, org.liveKey);
    assert.equal(usage.total_charged_usd, 0.015);
    assert.equal(usage.balance_usd, 0.985);
    assert.equal(usage.active_videos, 0);
    const list = await service.app.inject({ url: '/api/v1/videos?status=error', headers: { 'x-api-key': org.liveKey } });
    assert.deepEqual(
      list.json().videos.map((v: { id: string; days_remaining: number }) => v.id),
      [id],
    );
  });

  it('a snapshot between failures resets the count', async () => {
    const { collector, org, id } = await trackedThroughFlaky();
    const gone: FetchResult = { status: 'not_found', deleted: false, message: 'private' };
    for (const failing of [true, true, false, true, true]) {
      collector.failure = failing ? gone : null;
      await collectHours(service, 1, () => collectDue(service.work));
    }
    assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
    collector.failure = gone;
    await collectHours(service, 1, () => collectDue(service.work));
    const video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'error');
    assert.equal(video.is_deleted, false, 'private is not deleted');
    assert.deepEqual(await recordedSlots(service, id), [0, 3]);
  });
});

describe('a platform that is unreachable during tracking', () => {
  it('retries the slot within its hour, and a success within the hour counts', async () => {
    const { collector, org, started, id } = await trackedThroughFlaky();
    const at = (minutes: number) => service.clock.set(new Date(started + minutes * MINUTE_MS));

    collector.failure = unreachable;
    collector.calls.length = 0;
    at(60);
    assert.equal((await collectDue(service.work)).counts.size, 0, 'an unreachable slot is not a failure yet');
    at(62);
    await collectDue(service.work);
    assert.equal(collector.calls.length, 1, 'the retry waits a few minutes');
    at(65);
    await collectDue(service.work);
    assert.equal(collector.calls.length, 2);
    assert.deepEqual(
      collector.calls.map((c) => c.slot),
      [1, 1],
    );
    collector.failure = null;
    at(70);
    await collectDue(service.work);
    assert.deepEqual(await recordedSlots(service, id), [0, 1]);
    assert.equal((await eventsOf(service, 'CollectionFailed', id)).length, 0);
    const video = await getVideo(service, org.liveKey, id);
    assert.equal(video.snapshots[1]!.snapshot_time, new Date(started + 70 * MINUTE_MS).toISOString());
    assert.equal(video.snapshots[1]!.provider, 'flaky');
  });

  it('counts an hour as failed only once it is over, and errors after 3 failed hours', async () => {
    const { collector, org, started, id } = await trackedThroughFlaky();
    collector.failure = unreachable;

    // Every 5 minutes from hour 1 to just before hour 2: retried, never recorded.
    for (let minute = 60; minute < 120; minute += 5) {
      service.clock.set(new Date(started + minute * MINUTE_MS));
      await collectDue(service.work);
    }
    assert.equal(collector.calls.filter((c) => c.slot === 1).length, 12);
    assert.equal((await eventsOf(service, 'CollectionFailed', id)).length, 0);

    // Hour 2: slot 1's hour is over, so it is failed; slot 2 is tried in the next round.
    service.clock.set(new Date(started + 2 * HOUR_MS));
    await collectDue(service.work);
    await collectDue(service.work);
    let failures = await eventsOf(service, 'CollectionFailed', id);
    assert.deepEqual(
      failures.map((f) => [f.slot, f.reason, f.consecutiveFailures]),
      [[1, 'unreachable', 1]],
    );
    assert.equal(collector.calls.at(-1)!.slot, 2);

    for (const hour of [3, 4]) {
      service.clock.set(new Date(started + hour * HOUR_MS));
      await collectDue(service.work);
    }
    failures = await eventsOf(service, 'CollectionFailed', id);
    assert.deepEqual(
      failures.map((f) => [f.slot, f.consecutiveFailures]),
      [
        [1, 1],
        [2, 2],
        [3, 3],
      ],
    );
    const video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'error');
    assert.equal(video.is_deleted, false);
    await chargeUsage(service.work);
    assert.equal((await getUsage(service, org.liveKey)).total_charged_usd, 0.015);
  });

  it('a platform that says "not before" years away still has the hour counted as failed when it ends', async () => {
    const { collector, started, id } = await trackedThroughFlaky();
    for (const retryAfter of [new Date('5138-11-16T09:46:39Z'), new Date(Number.NaN)]) {
      collector.failure = { status: 'unavailable', message: 'rate limited', retryAfter };
      const failedBefore = (await eventsOf(service, 'CollectionFailed', id)).length;
      const hour = failedBefore + 1;
      service.clock.set(new Date(started + hour * HOUR_MS));
      await collectDue(service.work);
      service.clock.set(new Date(started + (hour + 1) * HOUR_MS));
      await collectDue(service.work);
      const failures = await eventsOf(service, 'CollectionFailed', id);
      assert.deepEqual(failures.map((f) => f.slot), Array.from({ length: hour }, (_, k) => k + 1), `retryAfter ${retryAfter.getTime()}`);
    }
    collector.failure = null;
    service.clock.set(new Date(started + 4 * HOUR_MS));
    await collectDue(service.work);
    await collectDue(service.work);
    assert.ok((await recordedSlots(service, id)).includes(3), 'collected again once the platform answers');
  });

  it('a collector that throws is treated as unreachable', async () => {
    const collector: Collector = {
      name: 'broken',
      async collect(refs) {
        if (refs.some((r) => r.slot > 0)) throw new Error('socket hang up');
        return refs.map(simulate);
      },
    };
    service = await startTestService({ live: { youtube: collector }, fallbackToSimulator: false });
    const org = await service.organization({ usd: '1' });
    const id = await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 4, () => collectDue(service.work));
    const failures = await eventsOf(service, 'CollectionFailed', id);
    assert.deepEqual(
      failures.map((f) => [f.slot, f.reason]),
      [
        [1, 'unreachable'],
        [2, 'unreachable'],
        [3, 'unreachable'],
      ],
    );
  });

  it('a collector that answers fewer videos than asked: the unanswered ones count as unreachable', async () => {
    const collector: Collector = {
      name: 'forgetful',
      async collect(refs) {
        // Answers the track call (slot 0), and then nothing at all.
        return refs.filter((r) => r.slot === 0).map(simulate);
      },
    };
    service = await startTestService({ live: { youtube: collector }, fallbackToSimulator: false });
    const org = await service.organization({ usd: '1' });
    const ids = [await track(service, org.liveKey, youtubeLink()), await track(service, org.liveKey, youtubeLink())];
    await collectHours(service, 4, () => collectDue(service.work));
    for (const id of ids) {
      assert.deepEqual(await recordedSlots(service, id), [0]);
      const failures = await eventsOf(service, 'CollectionFailed', id);
      assert.deepEqual(
        failures.map((f) => [f.slot, f.reason, f.message]),
        [1, 2, 3].map((slot) => [slot, 'unreachable', 'forgetful gave no answer for this video']),
      );
      assert.equal((await getVideo(service, org.liveKey, id)).status, 'error');
    }
  });
});

describe('videos that have ended', () => {
  it('a stopped or cancelled video is not collected any more', async () => {
    service = await startTestService();
    const org = await service.organization({ usd: '5' });
    const stopped = await track(service, org.liveKey, youtubeLink());
    const cancelled = await track(service, org.liveKey, youtubeLink());
    const running = await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 1, () => collectDue(service.work));

    const stop = await service.app.inject({ method: 'POST', url: `/api/v1/videos/${stopped}/stop`, headers: { 'x-api-key': org.liveKey } });
    assert.equal(stop.statusCode, 200, stop.body);
    const handled = await cancelVideo(service.store, service.clock, cancelled);
    await service.watcher.waitFor(handled.position, 5_000);

    await collectHours(service, 3, () => collectDue(service.work));
    assert.deepEqual(await recordedSlots(service, stopped), [0, 1]);
    assert.deepEqual(await recordedSlots(service, cancelled), [0, 1]);
    assert.deepEqual(await recordedSlots(service, running), [0, 1, 2, 3, 4]);
    assert.equal((await getVideo(service, org.liveKey, cancelled)).status, 'cancelled');

    // Neither is completed at the end of the period either, and only collected snapshots are billed.
    await collectHours(service, 20, async () => {
      await collectDue(service.work);
      await completeEnded(service.work);
    });
    await chargeUsage(service.work);
    assert.equal((await getVideo(service, org.liveKey, stopped)).status, 'completed');
    assert.equal((await getVideo(service, org.liveKey, cancelled)).status, 'cancelled');
    assert.equal((await getVideo(service, org.liveKey, running)).status, 'completed');
    assert.equal((await eventsOf(service, 'VideoCompleted', stopped)).length, 1);
    assert.equal((await getUsage(service, org.liveKey)).total_charged_usd, 0.42); // 2 + 2 + 24 snapshots
  });
});
