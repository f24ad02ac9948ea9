// Hourly collection through the scheduler's rounds, on the whole service with a ManualClock.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { HOUR_MS, DAY_MS } from '../../src/clock.ts';
import { collectDue, completeEnded, type WorkDeps } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import {
  assertAscending,
  assertNoDuplicateSlots,
  collectHours,
  eventsOf,
  getVideo,
  recordedSlots,
  track,
  youtubeLink,
} from './rounds.ts';

let service: TestService;
beforeEach(async () => {
  service = await startTestService();
});
afterEach(() => service.close());

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('collectDue', () => {
  for (const days of [1, 2]) {
    it(`collects slot 0 at once, then one snapshot an hour: ${24 * days} for ${days} day(s)`, async () => {
      const org = await service.organization({ usd: '5' });
      const started = service.clock.now().getTime();
      const id = await track(service, org.liveKey, youtubeLink(), days);
      assert.equal((await getVideo(service, org.liveKey, id)).snapshots.length, 1, 'slot 0 comes with the track call');

      // Half an hour in: slot 1 is not due yet.
      service.clock.advance(HOUR_MS / 2);
      await collectDue(service.work);
      assert.deepEqual(await recordedSlots(service, id), [0]);
      service.clock.set(new Date(started));

      for (let hour = 1; hour < 24 * days; hour++) {
        service.clock.advance(HOUR_MS);
        await collectDue(service.work);
        assert.deepEqual(await recordedSlots(service, id), range(hour + 1), `after hour ${hour}`);
        // A second round in the same hour finds nothing due.
        service.clock.advance(HOUR_MS / 2);
        const again = await collectDue(service.work);
        assert.equal(again.counts.size, 0, `second round in hour ${hour} appended ${[...again.counts.keys()]}`);
        service.clock.advance(-HOUR_MS / 2);
      }
      // The period is over: there is no slot 24·d.
      for (let extra = 0; extra < 3; extra++) {
        service.clock.advance(HOUR_MS);
        await collectDue(service.work);
      }

      const slots = await recordedSlots(service, id);
      assert.deepEqual(slots, range(24 * days));
      const video = await getVideo(service, org.liveKey, id);
      assert.equal(video.snapshots.length, 24 * days);
      assertAscending(video.snapshots.map((s) => s.snapshot_time));
      assert.equal(video.snapshots[0]!.snapshot_time, new Date(started).toISOString());
      assert.equal(video.snapshots[5]!.snapshot_time, new Date(started + 5 * HOUR_MS).toISOString());
    });
  }

  it('two schedulers racing over the same due videos never append a slot twice', async () => {
    const orgs = await Promise.all([1, 2, 3].map(() => service.organization({ usd: '10' })));
    const ids: string[] = [];
    for (const org of orgs) for (let i = 0; i < 4; i++) ids.push(await track(service, org.liveKey, youtubeLink()));
    const a: WorkDeps = { ...service.work, holder: 'scheduler-a', batchSize: 3 };
    const b: WorkDeps = { ...service.work, holder: 'scheduler-b', batchSize: 5 };
    // Same holder as a: its leases do not keep it out, so only the stream stands between it and a duplicate.
    const aTwin: WorkDeps = { ...service.work, holder: 'scheduler-a', batchSize: 500 };

    for (let hour = 1; hour < 24; hour++) {
      service.clock.advance(HOUR_MS);
      // Each keeps going until it finds nothing due, like the scheduler's drain.
      const drain = async (deps: WorkDeps) => {
        for (let round = 0; round < 20; round++) if ((await collectDue(deps)).claimed === 0) return;
      };
      await Promise.all([drain(a), drain(b), drain(aTwin), drain(b)]);
    }

    for (const id of ids) {
      const slots = await recordedSlots(service, id);
      assertNoDuplicateSlots(slots, `video ${id}`);
      assert.deepEqual([...slots].sort((x, y) => x - y), range(24), `video ${id}`);
    }
    assert.equal((await eventsOf(service, 'SnapshotRecorded')).length, ids.length * 24);
  });

  it('a late scheduler catches up the missed slots in order, without duplicates', async () => {
    const org = await service.organization({ usd: '5' });
    const id = await track(service, org.liveKey, youtubeLink());
    service.clock.advance(5 * HOUR_MS);
    // A sweep takes each video at least once; it may take it again once its slot is projected.
    let recorded = 1;
    for (let round = 1; recorded < 6; round++) {
      assert.ok(round <= 5, 'caught up within five sweeps');
      recorded += (await collectDue(service.work)).counts.get('SnapshotRecorded') ?? 0;
      assert.deepEqual(await recordedSlots(service, id), range(recorded));
    }
    const caughtUp = await collectDue(service.work);
    assert.equal(caughtUp.claimed, 0);
    assert.equal(caughtUp.counts.size, 0);
    await collectHours(service, 18, () => collectDue(service.work));
    const slots = await recordedSlots(service, id);
    assert.deepEqual(slots, range(24));
    const times = (await getVideo(service, org.liveKey, id)).snapshots.map((s) => Date.parse(s.snapshot_time));
    // Caught-up slots carry the time they were collected: never earlier than the one before.
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! >= times[i - 1]!);
  });

  it('does not collect a stopped video any more', async () => {
    const org = await service.organization({ usd: '5' });
    const id = await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 2, () => collectDue(service.work));
    const stop = await service.app.inject({ method: 'POST', url: `/api/v1/videos/${id}/stop`, headers: { 'x-api-key': org.liveKey } });
    assert.equal(stop.statusCode, 200, stop.body);
    await collectHours(service, 5, () => collectDue(service.work));
    assert.deepEqual(await recordedSlots(service, id), [0, 1, 2]);
  });
});

describe('completeEnded', () => {
  it('completes a 1-day video at start + 1 day, not before; days_remaining is then 0', async () => {
    const org = await service.organization({ usd: '5' });
    const started = service.clock.now().getTime();
    const id = await track(service, org.liveKey, youtubeLink());
    for (let hour = 1; hour < 24; hour++) {
      service.clock.advance(HOUR_MS);
      await collectDue(service.work);
      assert.equal((await completeEnded(service.work)).counts.size, 0, `completed at hour ${hour}`);
    }
    let video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'monitoring');
    assert.equal(video.days_remaining, Math.round(10_000 / 24) / 10_000, 'one hour left');
    service.clock.set(new Date(started + DAY_MS - 1));
    assert.equal((await completeEnded(service.work)).counts.size, 0, 'completed a millisecond early');
    assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');

    service.clock.set(new Date(started + DAY_MS));
    const round = await completeEnded(service.work);
    assert.equal(round.counts.get('VideoCompleted'), 1);
    video = await getVideo(service, org.liveKey, id);
    assert.equal(video.status, 'completed');
    assert.equal(video.days_remaining, 0);
    assert.equal(video.snapshots.length, 24);
    const [completed] = await eventsOf(service, 'VideoCompleted', id);
    assert.equal(completed!.reason, 'period_ended');
    assert.equal(completed!.at, new Date(started + DAY_MS).toISOString());

    // Nothing more happens to it.
    service.clock.advance(HOUR_MS);
    assert.equal((await completeEnded(service.work)).counts.size, 0);
    assert.equal((await collectDue(service.work)).counts.size, 0);
  });

  it('completes only once every slot is handled: a slot missed while no scheduler ran is collected after the end', async () => {
    const org = await service.organization({ usd: '5' });
    const started = service.clock.now().getTime();
    const id = await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 22, () => collectDue(service.work)); // slots 1..22; the scheduler then stops
    service.clock.set(new Date(started + DAY_MS + 5 * HOUR_MS));
    assert.equal((await completeEnded(service.work)).counts.size, 0);
    assert.equal((await collectDue(service.work)).counts.get('SnapshotRecorded'), 1);
    assert.equal((await completeEnded(service.work)).counts.get('VideoCompleted'), 1);
    assert.equal((await getVideo(service, org.liveKey, id)).snapshots.length, 24);
  });
});
