// A batch the store refuses for one stream's data (a refusal that names no stream, as
// PostgreSQL's for one bad row of a statement): the sweep's append isolates that stream, every
// other video of the batch gets its snapshot, and the slot at fault is recorded as a collection
// failure saying the answer could not be stored, appended alone.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import type { EventStore, StreamAppend } from '../../src/eventstore/port.ts';
import { UnstorableData } from '../../src/eventstore/unstorable.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { eventsOf, track, youtubeLink } from './rounds.ts';

let service: TestService;
beforeEach(async () => {
  service = await startTestService();
});
afterEach(() => service.close());

describe('a batch refused for one stream', () => {
  it('lands every other stream and records the one at fault as a failed collection', async () => {
    const org = await service.organization({ usd: '100' });
    const ids: string[] = [];
    for (let start = 0; start < 200; start += 20) {
      ids.push(...(await Promise.all(Array.from({ length: 20 }, () => track(service, org.testKey, youtubeLink())))));
    }
    await service.settle();
    const poisoned = `video-${ids[117]}`;
    let statements = 0;
    const inner = service.store;
    const refusing: EventStore = Object.assign(Object.create(inner) as EventStore, {
      appendMany: async (appends: readonly StreamAppend[]) => {
        if (appends.some((a) => a.events.some((e) => e.type === 'SnapshotRecorded'))) statements++;
        const bad = appends.find((a) => a.streamId === poisoned && a.events.some((e) => e.type === 'SnapshotRecorded'));
        if (bad) throw new UnstorableData(null, 'unsupported Unicode escape sequence (22P05)');
        return inner.appendMany(appends);
      },
    });

    service.clock.advance(HOUR_MS);
    const round = await collectDue({ ...service.work, store: refusing });
    await service.settle();
    assert.equal(round.counts.get('SnapshotRecorded'), 199);
    assert.equal(round.counts.get('CollectionFailed'), 1);
    // The whole batch, then two halves per level down to one stream: 1 + 2·⌈log2 200⌉ at most
    // (the bad id sorts anywhere, so a path may be a level shorter).
    assert.ok(statements <= 1 + 2 * 8, `${statements} statements of snapshots to isolate one stream of 200`);
    const slot1 = (await eventsOf(service, 'SnapshotRecorded')).filter((s) => s.slot === 1).map((s) => s.videoId);
    assert.equal(new Set(slot1).size, 199);
    const [failure] = await eventsOf(service, 'CollectionFailed', ids[117]);
    assert.equal(failure!.slot, 1);
    assert.equal(failure!.reason, 'unstorable');
    assert.match(failure!.message, /could not be stored: unsupported Unicode escape sequence/);
    // The video goes on: its next slot is collected as usual.
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
    await service.settle();
    assert.deepEqual((await eventsOf(service, 'SnapshotRecorded', ids[117])).map((s) => s.slot), [0, 2]);
  });
});
