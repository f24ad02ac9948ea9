// A sweep whose append fails (here: the store's connection drops after the batch committed, so
// its outcome is unknown to the sweep) fails as a round: the rejection is handled, never left
// to kill the process; the leases are released; what did land is recorded as spent; and the
// next round collects the rest, each slot once.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { assertNoDuplicateSlots, eventsOf, track, youtubeLink } from './rounds.ts';

let service: TestService;
beforeEach(async () => {
  service = await startTestService();
});
afterEach(() => service.close());

describe('a sweep whose append fails', () => {
  it('rejects the round without an unhandled rejection, releases its leases, and the next round finishes the work', async () => {
    const org = await service.organization({ usd: '20' });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await track(service, org.liveKey, youtubeLink()));
    await service.settle();

    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const dropped = new Error('terminating connection due to administrator command');
    let calls = 0;
    const inner = service.store;
    // The first batch commits, then its connection is lost: the sweep cannot know it landed.
    const flaky: EventStore = Object.assign(Object.create(inner) as EventStore, {
      appendMany: async (appends: Parameters<EventStore['appendMany']>[0]) => {
        const results = await inner.appendMany(appends);
        if (++calls === 1) throw dropped;
        return results;
      },
    });
    try {
      service.clock.advance(HOUR_MS);
      await assert.rejects(collectDue({ ...service.work, store: flaky, batchSize: 5, projectionWaitMs: 5_000 }), (error) => error === dropped);
      // Give a stray rejection the turns of the event loop it needs to be reported.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(unhandled, [], 'a rejection nobody handled');

    const { rows } = await service.db.pool.query(`SELECT leased_until = '-infinity' AS free, in_flight, spent_commit FROM sched.org_leases WHERE org_id = $1`, [org.orgId]);
    assert.equal(rows[0].free, true, 'the failed sweep released its lease');
    assert.equal(rows[0].in_flight, null, 'the outcome of the failed append was read from the log');
    assert.notEqual(rows[0].spent_commit, null, 'what landed is recorded as spent');
    assert.equal((await eventsOf(service, 'SnapshotRecorded')).filter((s) => s.slot === 1).length, 5, 'the first batch landed; the sweep stopped there');

    await service.settle();
    await collectDue({ ...service.work, projectionWaitMs: 5_000 });
    await service.settle();
    for (const id of ids) {
      const slots = (await eventsOf(service, 'SnapshotRecorded', id)).map((s) => s.slot);
      assertNoDuplicateSlots(slots, id);
      assert.deepEqual(slots, [0, 1], id);
    }
  });
});
