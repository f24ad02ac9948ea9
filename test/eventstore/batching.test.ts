// The batching decorator (src/eventstore/batching.ts): the whole EventStore contract on top
// of PostgreSQL, then what batching itself promises: concurrent appends and reads share round
// trips, yet each keeps its own outcome.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { BatchingEventStore } from '../../src/eventstore/batching.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { eventStoreMigrations } from '../../src/eventstore/postgres-schema.ts';
import { appendManyIsolating, isRefused } from '../../src/eventstore/isolate.ts';
import { WrongExpectedRevision, type EventStore, type StreamAppend } from '../../src/eventstore/port.ts';
import { UnstorableData } from '../../src/eventstore/unstorable.ts';
import { createTestDatabase } from '../support/db.ts';
import { beginAppendOn } from './postgres-late-commit.ts';
import { eventStoreContract } from './contract.ts';

async function makeStores() {
  const db = await createTestDatabase();
  await migrate(db.pool, eventStoreMigrations);
  const inner = new PostgresEventStore(db.pool, { pollIntervalMs: 200 });
  const calls = { appendMany: 0, readStream: 0, readStreams: 0 };
  // Counts the round trips the decorator makes on the store underneath.
  const counted: EventStore = {
    append: (...args) => inner.append(...args),
    appendMany: (appends) => (calls.appendMany++, inner.appendMany(appends)),
    readStream: (id) => (calls.readStream++, inner.readStream(id)),
    readStreams: (ids) => (calls.readStreams++, inner.readStreams(ids)),
    subscribeAll: (...args) => inner.subscribeAll(...args),
    readAll: (...args) => inner.readAll(...args),
    countEventsAfter: (...args) => inner.countEventsAfter(...args),
    headPosition: () => inner.headPosition(),
    countEvents: () => inner.countEvents(),
    close: () => inner.close(),
  };
  const store = new BatchingEventStore(counted);
  return { db, inner, store, calls, teardown: async () => (await store.close(), await db.drop()) };
}

eventStoreContract('batching over postgres', async () => {
  const { db, store, teardown } = await makeStores();
  return {
    store,
    teardown,
    beginAppend: beginAppendOn(db.pool),
  };
});

const event = (n: number) => ({ type: 'E', data: { n } });

test('batching: concurrent appends share statements and keep their own results', async () => {
  const { store, calls, teardown } = await makeStores();
  try {
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.append(`s-${i}`, [event(i), event(i + 1)], 'no_stream')));
    assert.ok(calls.appendMany <= 3, `50 appends in ${calls.appendMany} statements`);
    for (const [i, result] of results.entries()) {
      assert.equal(result.nextExpectedRevision, 1n);
      const events = await store.readStream(`s-${i}`);
      assert.deepEqual(events.map((e) => e.data), [{ n: i }, { n: i + 1 }]);
      assert.deepEqual(events[1]!.position, result.position);
    }
  } finally {
    await teardown();
  }
});

test('batching: a conflict fails only its own append', async () => {
  const { store, teardown } = await makeStores();
  try {
    await store.append('taken', [event(0)], 'no_stream');
    const outcomes = await Promise.allSettled([
      store.append('free-1', [event(1)], 'no_stream'),
      store.append('taken', [event(2)], 'no_stream'),
      store.append('free-2', [event(3)], 'no_stream'),
    ]);
    assert.equal(outcomes[0]!.status, 'fulfilled');
    assert.equal(outcomes[2]!.status, 'fulfilled');
    assert.equal(outcomes[1]!.status, 'rejected');
    const error = (outcomes[1] as PromiseRejectedResult).reason;
    assert.ok(error instanceof WrongExpectedRevision);
    assert.equal(error.actual, 0n);
  } finally {
    await teardown();
  }
});

test('batching: two appends to one stream go in separate batches, the second sees the first', async () => {
  const { store, teardown } = await makeStores();
  try {
    // Both claim an empty stream: exactly one wins, as without batching.
    const outcomes = await Promise.allSettled([store.append('same', [event(1)], 'no_stream'), store.append('same', [event(2)], 'no_stream')]);
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ['fulfilled', 'rejected']);
    assert.equal((await store.readStream('same')).length, 1);
    // 'any' appends to one stream all land, in order.
    await Promise.all([store.append('any', [event(1)], 'any'), store.append('any', [event(2)], 'any'), store.append('any', [event(3)], 'any')]);
    assert.deepEqual((await store.readStream('any')).map((e) => e.data), [{ n: 1 }, { n: 2 }, { n: 3 }]);
  } finally {
    await teardown();
  }
});

test('batching: a batch refused for one append\'s data is split down to it, so only the append at fault fails', async () => {
  const { store, teardown } = await makeStores();
  try {
    // Hold a first append in flight so that the next three queue up and go as one batch.
    const first = store.append('first', [event(0)], 'no_stream');
    const rest = [
      store.append('good-1', [event(1)], 'no_stream'),
      store.append('bad', [{ type: 'E', data: { text: 'nul \u0000 inside' } }], 'no_stream'),
      store.append('good-2', [event(2)], 'no_stream'),
      store.append('lone', [{ type: 'E', data: { text: 'lone \ud800 surrogate' } }], 'no_stream'),
      store.append('good-3', [event(3)], 'no_stream'),
    ];
    const outcomes = await Promise.allSettled([first, ...rest]);
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /stream bad: .*U\+0000/);
    assert.match(String((outcomes[4] as PromiseRejectedResult).reason), /stream lone: .*surrogate/);
    assert.equal((await store.readStream('good-2')).length, 1);
    assert.equal((await store.readStream('good-3')).length, 1);
    assert.deepEqual(await store.readStream('bad'), []);
    assert.deepEqual(await store.readStream('lone'), []);
  } finally {
    await teardown();
  }
});

test('batching: an append with no events, an invalid expected revision or data that is not JSON fails alone; the others of its batch are written', async () => {
  const { store, teardown } = await makeStores();
  try {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    // Hold a first append in flight so that the next ones queue up and go as one batch.
    const first = store.append('first', [event(0)], 'no_stream');
    const rest = [
      store.append('good-1', [event(1)], 'no_stream'),
      store.append('empty', [], 'no_stream'),
      store.append('good-2', [event(2)], 'no_stream'),
      store.append('negative', [event(3)], -1n),
      store.append('big', [{ type: 'E', data: { n: 1n } }], 'no_stream'),
      store.append('cycle', [{ type: 'E', data: cyclic }], 'no_stream'),
      store.append('good-3', [event(3)], 'no_stream'),
    ];
    const outcomes = await Promise.allSettled([first, ...rest]);
    assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    const reason = (i: number) => String((outcomes[i] as PromiseRejectedResult).reason);
    assert.match(reason(2), /append to empty has no events/);
    assert.match(reason(4), /stream negative: invalid expected revision -1/);
    assert.match(reason(5), /UnstorableData: stream big: .*BigInt/);
    assert.match(reason(6), /UnstorableData: stream cycle: .*circular/);
    for (const good of ['good-1', 'good-2', 'good-3']) assert.equal((await store.readStream(good)).length, 1, good);
    for (const bad of ['empty', 'negative', 'big', 'cycle']) assert.deepEqual(await store.readStream(bad), [], bad);
  } finally {
    await teardown();
  }
});

test('batching: concurrent reads share round trips', async () => {
  const { store, calls, teardown } = await makeStores();
  try {
    const appends: StreamAppend[] = Array.from({ length: 20 }, (_, i) => ({ streamId: `r-${i}`, events: [event(i)], expectedRevision: 'no_stream' }));
    await store.appendMany(appends);
    const reads = await Promise.all([...appends.map((a) => store.readStream(a.streamId)), store.readStream('r-3'), store.readStream('missing')]);
    assert.ok(calls.readStreams <= 2, `22 reads in ${calls.readStreams} round trips`);
    assert.equal(calls.readStream, 0);
    reads.slice(0, 20).forEach((events, i) => assert.deepEqual(events.map((e) => e.data), [{ n: i }]));
    assert.deepEqual(reads[20]!.map((e) => e.data), [{ n: 3 }]);
    assert.deepEqual(reads[21], []);
  } finally {
    await teardown();
  }
});

test('batching: an append made just as a batch finishes is not left behind', async () => {
  const { store, teardown } = await makeStores();
  try {
    for (let round = 0; round < 30; round++) {
      const first = store.append(`a-${round}`, [event(round)], 'no_stream');
      // Chained to the first: it arrives in the very step in which the batcher finds its queue empty.
      const second = first.then(() => store.append(`b-${round}`, [event(round)], 'no_stream'));
      await Promise.race([second, new Promise((_, reject) => setTimeout(() => reject(new Error('append left in the queue')), 5_000))]);
    }
  } finally {
    await teardown();
  }
});

test('appendManyIsolating: a batch PostgreSQL refuses as a whole, for a stream it does not name, is halved down to that stream', async () => {
  const { inner, calls, teardown } = await makeStores();
  try {
    const counted = { appendMany: (appends: readonly StreamAppend[]) => (calls.appendMany++, inner.appendMany(appends)) };
    // text refuses the NUL in an event type: PostgreSQL fails the whole statement (a data exception, class 22), naming no row.
    const appends: StreamAppend[] = Array.from({ length: 64 }, (_, i) => ({
      streamId: `h-${i}`,
      events: [i === 37 ? { type: 'E\u0000', data: {} } : event(i)],
      expectedRevision: 'no_stream',
    }));
    const results = await appendManyIsolating(counted, appends);
    assert.deepEqual(results.flatMap((r, i) => (r.ok ? [] : [i])), [37]);
    const refused = results[37]!;
    assert.ok(isRefused(refused) && refused.refused instanceof UnstorableData && /\(22[0-9A-Z]{3}\)/.test(refused.refused.message), String(!refused.ok && 'refused' in refused && refused.refused));
    assert.ok(calls.appendMany <= 2 * Math.log2(64) + 1, `${calls.appendMany} statements to isolate one stream of 64`);
    assert.equal((await inner.readStreams(appends.map((a) => a.streamId))).size, 64);
    for (const [i, a] of appends.entries()) assert.equal((await inner.readStream(a.streamId)).length, i === 37 ? 0 : 1, a.streamId);
  } finally {
    await teardown();
  }
});

test('batching: an outage fails the batch\'s appends with its error, without a storm of single appends', async () => {
  const db = await createTestDatabase();
  try {
    await migrate(db.pool, eventStoreMigrations);
    const inner = new PostgresEventStore(db.pool);
    let attempts = 0;
    const down = new Error('connect ECONNREFUSED');
    const failing: EventStore = Object.assign(Object.create(inner) as EventStore, {
      appendMany: async () => {
        attempts++;
        throw down;
      },
      append: async () => {
        attempts++;
        throw down;
      },
    });
    const store = new BatchingEventStore(failing);
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.append(`o-${i}`, [event(i)], 'no_stream')));
    assert.ok(outcomes.every((o) => o.status === 'rejected' && o.reason === down));
    assert.ok(attempts <= 2, `${attempts} attempts for 10 appends in at most two batches`);
  } finally {
    await db.drop();
  }
});

/** What a store answers for a stream it wrote. */
const written = (streamId: string, n: number) => ({ streamId, ok: true as const, result: { nextExpectedRevision: 0n, position: { commit: BigInt(n), prepare: BigInt(n) } } });

test('batching: an append that failed while the others of its batch were written (EventStoreDB) rejects alone; the others resolve as written', async () => {
  const down = Object.assign(new Error('server unavailable'), { type: 'unavailable' });
  const batches: string[][] = [];
  const inner = {
    appendMany: async (appends: readonly StreamAppend[]) => {
      batches.push(appends.map((a) => a.streamId));
      return appends.map((a, i) => (a.streamId === 'x' ? { streamId: a.streamId, ok: false as const, failed: down } : written(a.streamId, batches.length * 10 + i)));
    },
    close: async () => {},
  } as unknown as EventStore;
  const store = new BatchingEventStore(inner);
  const outcomes = await Promise.allSettled(['first', 'b', 'x', 'c'].map((s) => store.append(s, [event(0)], 'no_stream')));
  assert.deepEqual(batches, [['first'], ['b', 'x', 'c']]);
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
  assert.equal((outcomes[2] as PromiseRejectedResult).reason, down);
  assert.deepEqual(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.position.prepare : null)), [10n, 20n, null, 22n]);
  await store.close();
});

test('appendManyIsolating: an outage in a later half fails that half only once the first half is written; with nothing written it fails the call', async () => {
  const down = new Error('connect ECONNREFUSED');
  const landed: string[] = [];
  // Refuses any batch of more than two as a whole (no stream named); down for any batch holding 'down'.
  const store = {
    appendMany: async (appends: readonly StreamAppend[]) => {
      if (appends.length > 2) throw new UnstorableData(null, 'refused as a whole');
      if (appends.some((a) => a.streamId === 'down')) throw down;
      landed.push(...appends.map((a) => a.streamId));
      return appends.map((a, i) => written(a.streamId, landed.length + i));
    },
  };
  const appends = (ids: string[]): StreamAppend[] => ids.map((streamId) => ({ streamId, events: [event(0)], expectedRevision: 'no_stream' }));

  const results = await appendManyIsolating(store, appends(['a', 'b', 'down', 'c']));
  assert.deepEqual(landed, ['a', 'b']);
  assert.deepEqual(results.map((r) => [r.streamId, r.ok]), [['a', true], ['b', true], ['down', false], ['c', false]]);
  for (const r of results.slice(2)) assert.ok('failed' in r && r.failed === down, r.streamId);

  landed.length = 0;
  await assert.rejects(appendManyIsolating(store, appends(['down', 'c', 'a', 'b'])), (error) => error === down);
  assert.deepEqual(landed, [], 'nothing written before the outage');
});
