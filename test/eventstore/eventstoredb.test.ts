// The EventStoreDB adapter: the shared contract suite against a real server (EVENTSTORE_URL,
// or a container when a Docker engine answers; otherwise every test is reported skipped with
// the reason), plus tests that need no server: the mapping of positions, revisions and
// errors, and the adapter's use of the client (subscriptions replaced after a failure,
// system events never delivered, conflicts per stream, retries with the same event ids)
// against a stand-in for the handful of client calls it makes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { after, test } from 'node:test';
import { EventStoreDBClient, streamNameFilter } from '@eventstore/db-client';
import {
  estimateCount,
  EventStoreDbStore,
  isOwnEvent,
  isTransient,
  mapConcurrently,
  toClientExpectedRevision,
  toPosition,
  toRecordedEvent,
  toWrongExpectedRevision,
} from '../../src/eventstore/eventstoredb.ts';
import { BatchingEventStore } from '../../src/eventstore/batching.ts';
import { appendError, formatPosition, parsePosition, WrongExpectedRevision, type AppendResult, type EventStore, type Position, type RecordedEvent, type StreamAppend } from '../../src/eventstore/port.ts';
import { isUnstorableData } from '../../src/eventstore/unstorable.ts';
import { eventStoreContract } from './contract.ts';

const IMAGE = process.env.EVENTSTORE_TEST_IMAGE || 'eventstore/eventstore:24.10';
const NO_SERVER = 'no EventStoreDB: set EVENTSTORE_URL or run a Docker engine';

// ---------------------------------------------------------------------------
// Against a server

const server = await findServer();
const serverSkip = 'skip' in server ? server.skip : undefined;
const client = 'url' in server ? EventStoreDBClient.connectionString(server.url) : undefined;
after(async () => {
  await client?.dispose();
  if ('url' in server) await server.stop?.();
});

/** A prefix no other store on the shared server uses. */
const newPrefix = () => `t${randomBytes(6).toString('hex')}-`;
/** A store of its own on the shared server: its streams live under a prefix of its own. */
const prefixed = (prefix = newPrefix()) => new EventStoreDbStore(client!, { streamPrefix: prefix });

eventStoreContract(
  'eventstoredb',
  async () => {
    const store = prefixed();
    return { store, teardown: () => store.close() };
  },
  { skip: serverSkip },
);

test("eventstoredb: system events and other stores' streams are never delivered, nor counted as the head", { skip: serverSkip }, async () => {
  const myPrefix = newPrefix();
  const mine = prefixed(myPrefix);
  const theirs = prefixed();
  try {
    await theirs.append('s', [{ type: 'E', data: { theirs: true } }], 'no_stream');
    const written = await mine.append('s', [{ type: 'E', data: { mine: true } }], 'no_stream');
    // Written by EventStoreDB itself into $$<stream>, with type $metadata.
    await client!.setStreamMetadata(`${myPrefix}s`, { maxCount: 1000 });
    await theirs.append('s', [{ type: 'E', data: { theirs: true } }], 0n);
    assert.deepEqual(await mine.headPosition(), written.position);
    const seen = await firstPages(mine.subscribeAll(null), 1, 300);
    assert.deepEqual(seen.map((e) => [e.streamId, e.data]), [['s', { mine: true }]]);
  } finally {
    await mine.close();
    await theirs.close();
  }
});

test('eventstoredb: without a prefix, every non-system stream is read and $-streams are not', { skip: serverSkip }, async () => {
  const all = new EventStoreDbStore(client!);
  try {
    const from = await all.headPosition();
    const name = `plain${randomBytes(6).toString('hex')}`;
    await client!.setStreamMetadata(name, { maxCount: 10 });
    await all.append(name, [{ type: 'E', data: { n: 1 } }], 'any');
    await all.append(name, [{ type: 'E', data: { n: 2 } }], 'any');
    const seen = await firstPages(all.subscribeAll(from), 2, 300);
    assert.deepEqual(seen.map((e) => [e.streamId, e.data]), [[name, { n: 1 }], [name, { n: 2 }]]);
  } finally {
    await all.close();
  }
});

test('eventstoredb: readStreams answers every stream asked for, [] for a missing one', { skip: serverSkip }, async () => {
  const store = prefixed();
  try {
    await store.append('a', [{ type: 'E', data: 1 }, { type: 'E', data: 2 }], 'no_stream');
    const streams = await store.readStreams(['a', 'missing', 'a']);
    assert.deepEqual([...streams.keys()], ['a', 'missing']);
    assert.deepEqual(streams.get('a')!.map((e) => e.data), [1, 2]);
    assert.deepEqual(streams.get('missing'), []);
    assert.ok((await store.countEvents()) >= 0);
  } finally {
    await store.close();
  }
});

// ---------------------------------------------------------------------------
// Without a server: mapping

test('eventstoredb mapping: positions stay bigints, exact beyond 2^53, and travel as text', () => {
  const big = { commit: 2n ** 63n + 7n, prepare: 2n ** 63n + 5n };
  const position = toPosition(big);
  assert.deepEqual(position, big);
  assert.equal(typeof position.commit, 'bigint');
  assert.equal(formatPosition(position), '9223372036854775815/9223372036854775813');
  assert.deepEqual(parsePosition(formatPosition(position)), big);
  // The trap the text form avoids.
  assert.throws(() => JSON.stringify(position), TypeError);
  // No position (a stream read from a server before 22.6), or the "unknown" 2^64-1: refused, not guessed.
  assert.throws(() => toPosition(undefined), /no log position/);
  assert.throws(() => toPosition({ commit: 2n ** 64n - 1n, prepare: 2n ** 64n - 1n }), /no log position/);
  assert.throws(() => toPosition({ commit: 5, prepare: 5 }), /no log position/);
});

test('eventstoredb mapping: expected revisions and conflicts', () => {
  assert.equal(toClientExpectedRevision('no_stream'), 'no_stream');
  assert.equal(toClientExpectedRevision('any'), 'any');
  assert.equal(toClientExpectedRevision(2n ** 62n), 2n ** 62n);

  const conflict = toWrongExpectedRevision('video-1', 3n, 5n);
  assert.ok(conflict instanceof WrongExpectedRevision);
  assert.deepEqual([conflict.streamId, conflict.expected, conflict.actual], ['video-1', 3n, 5n]);
  assert.equal(toWrongExpectedRevision('s', 0n, 'no_stream').actual, 'no_stream');
  // Older servers report a missing stream as -1 in the error's metadata.
  assert.equal(toWrongExpectedRevision('s', 0n, -1n).actual, 'no_stream');
  assert.equal(toWrongExpectedRevision('s', 'no_stream', 0n).actual, 0n);
});

test('eventstoredb mapping: recorded events lose the store prefix, keep data and metadata as stored', () => {
  const created = new Date('2025-01-02T03:04:05Z');
  const base = { id: '6f1c3e9a-1111-4222-8333-444455556666', revision: 2n, type: 'SnapshotRecorded', created, position: { commit: 10n, prepare: 9n } };
  const event = toRecordedEvent({ ...base, streamId: 'tabc-video-1', data: { views: '9007199254740993' }, metadata: { correlationId: 'c' } }, 'tabc-');
  assert.deepEqual(event, {
    id: base.id,
    streamId: 'video-1',
    revision: 2n,
    position: { commit: 10n, prepare: 9n },
    type: 'SnapshotRecorded',
    data: { views: '9007199254740993' },
    metadata: { correlationId: 'c' },
    recordedAt: created,
  });
  assert.deepEqual(toRecordedEvent({ ...base, streamId: 's', data: null }, '').metadata, {});
  assert.deepEqual(toRecordedEvent({ ...base, streamId: 's', data: null, metadata: new Uint8Array([1]) }, '').metadata, {});
  assert.throws(() => toRecordedEvent({ ...base, streamId: 's', data: null, position: undefined }, '', 'stream'), /stream reads carry positions from server 22.6/);

  assert.equal(isOwnEvent('video-1', 'E', ''), true);
  assert.equal(isOwnEvent('$$video-1', '$metadata', ''), false);
  assert.equal(isOwnEvent('$stats-127.0.0.1:2113', 'E', ''), false);
  assert.equal(isOwnEvent('video-1', '$>', ''), false, 'a link event');
  assert.equal(isOwnEvent('tabc-video-1', 'E', 'tabc-'), true);
  assert.equal(isOwnEvent('tdef-video-1', 'E', 'tabc-'), false);
});

test('eventstoredb mapping: countEvents estimate', () => {
  const at = (commit: bigint): Position => ({ commit, prepare: commit });
  // The whole log was sampled: exact.
  assert.equal(estimateCount({ records: 40, ours: 25, newest: at(4000n), oldest: at(0n), complete: true }), 25);
  // 1000 records over the last 100 000 bytes, 600 of them ours, in a log of 1 000 000 bytes: about 6000.
  const estimate = estimateCount({ records: 1000, ours: 600, newest: at(1_000_000n), oldest: at(900_100n), complete: false });
  assert.ok(Math.abs(estimate - 6000) < 60, String(estimate));
  // Positions beyond 2^53 do not overflow into nonsense.
  const huge = estimateCount({ records: 1000, ours: 1000, newest: at(2n ** 60n), oldest: at(2n ** 60n - 99_900n), complete: false });
  assert.ok(Number.isSafeInteger(huge) && huge > 1000);
  assert.equal(estimateCount({ records: 0, ours: 0, complete: true }), 0);
});

test('eventstoredb: an append of text the read models cannot hold is refused before it is sent, naming the stream', async () => {
  // No server: the refusal comes before the client would connect (port 1 answers nobody).
  const store = new EventStoreDbStore('esdb://127.0.0.1:1?tls=false');
  try {
    for (const data of [{ title: 'a\u0000b' }, { nested: ['\ud800'] }, { ['key\u0000']: 1 }]) {
      await assert.rejects(store.append('video-x', [{ type: 'T', data }], 'any'), (error: unknown) => isUnstorableData(error) && error.streamId === 'video-x');
    }
    await assert.rejects(store.appendMany([{ streamId: 'video-y', events: [{ type: 'T', data: {}, metadata: { note: '\udfff' } }], expectedRevision: 'any' }]), (error: unknown) => isUnstorableData(error) && error.streamId === 'video-y');
    await assert.rejects(store.append('video-\u0000', [{ type: 'T', data: {} }], 'any'), isUnstorableData);
  } finally {
    await store.close();
  }
});

test('eventstoredb: transient errors are told from the rest', () => {
  assert.equal(isTransient({ type: 'unavailable' }), true);
  assert.equal(isTransient({ type: 'deadline-exceeded' }), true);
  assert.equal(isTransient({ type: 'not-leader' }), true);
  assert.equal(isTransient(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })), true);
  assert.equal(isTransient(Object.assign(new Error('14 UNAVAILABLE'), { code: 14 })), true);
  assert.equal(isTransient({ type: 'access-denied' }), false);
  assert.equal(isTransient({ type: 'wrong-expected-version' }), false);
  assert.equal(isTransient(new TypeError('a bug')), false);
});

test('eventstoredb: mapConcurrently keeps input order, holds the bound, and fails only after all settle', async () => {
  let running = 0;
  let most = 0;
  const results = await mapConcurrently([5, 1, 4, 2, 3], 2, async (n) => {
    most = Math.max(most, ++running);
    await sleep(n * 3);
    running--;
    return n * 10;
  });
  assert.deepEqual(results, [50, 10, 40, 20, 30]);
  assert.equal(most, 2);
  const finished: number[] = [];
  await assert.rejects(
    mapConcurrently([1, 2, 3], 3, async (n) => {
      if (n === 1) throw new Error('one failed');
      await sleep(10);
      finished.push(n);
    }),
    /one failed/,
  );
  assert.deepEqual(finished.sort(), [2, 3]);
});

// ---------------------------------------------------------------------------
// Without a server: the adapter against a stand-in for the client calls it makes

interface FakeRecord {
  event: { streamId: string; id: string; revision: bigint; type: string; data: unknown; metadata?: unknown; created: Date; isJson: true; position: Position };
}

/** subscribeToAll, readAll, readStream and appendToStream, shaped as the client's, over a log in memory. */
class FakeClient {
  readonly log: FakeRecord[] = [];
  readonly subscriptions: { fromPosition: unknown; filter: unknown; stream: PassThrough }[] = [];
  readonly appendCalls: { stream: string; ids: string[]; expectedRevision: unknown }[] = [];
  /** Per stream, failures to throw before an append goes through. */
  readonly failAppends = new Map<string, unknown[]>();
  disposed = false;

  record(streamId: string, type = 'E', data: unknown = {}): FakeRecord {
    const n = BigInt(this.log.length + 1) * 100n + 2n ** 55n;
    const revision = BigInt(this.log.filter((r) => r.event.streamId === streamId).length);
    const record: FakeRecord = {
      event: { streamId, id: `00000000-0000-4000-8000-${String(this.log.length).padStart(12, '0')}`, revision, type, data, created: new Date(0), isJson: true, position: { commit: n, prepare: n } },
    };
    this.log.push(record);
    for (const s of this.subscriptions) if (!s.stream.destroyed && matches(s.filter, streamId)) s.stream.write(record);
    return record;
  }

  subscribeToAll(options: { fromPosition: unknown; filter: unknown }, readableOptions: { highWaterMark?: number } = {}) {
    const stream = Object.assign(new PassThrough({ objectMode: true, highWaterMark: readableOptions.highWaterMark }), {
      unsubscribe: async () => {
        if (!stream.destroyed) stream.end();
      },
    });
    this.subscriptions.push({ fromPosition: options.fromPosition, filter: options.filter, stream });
    const from = options.fromPosition;
    for (const record of this.log) {
      const after = from === 'start' || (typeof from === 'object' && from !== null && record.event.position.commit > (from as Position).commit);
      if (after && matches(options.filter, record.event.streamId)) stream.write(record);
    }
    queueMicrotask(() => stream.emit('caughtUp'));
    return stream;
  }

  readAll(options: { direction: string; maxCount?: number }) {
    const records = options.direction === 'backwards' ? [...this.log].reverse() : [...this.log];
    return Object.assign(Readable.from(records.slice(0, options.maxCount ?? Infinity)), { cancel: async () => {} });
  }

  readStream(stream: string, options: { fromRevision?: unknown; maxCount?: number } = {}) {
    const all = this.log.filter((r) => r.event.streamId === stream);
    const from = typeof options.fromRevision === 'bigint' ? options.fromRevision : 0n;
    const records = all.filter((r) => r.event.revision >= from).slice(0, options.maxCount ?? Infinity);
    return Object.assign(
      Readable.from(
        (async function* () {
          if (all.length === 0) throw Object.assign(new Error(`${stream} not found`), { type: 'stream-not-found' });
          yield* records;
        })(),
      ),
      { cancel: async () => {} },
    );
  }

  async appendToStream(stream: string, events: { id: string; type: string; data: unknown }[], options: { expectedRevision: unknown }) {
    this.appendCalls.push({ stream, ids: events.map((e) => e.id), expectedRevision: options.expectedRevision });
    const failure = this.failAppends.get(stream)?.shift();
    if (failure) throw failure;
    const current = this.log.filter((r) => r.event.streamId === stream).length - 1;
    const expected = options.expectedRevision;
    const ok = expected === 'any' || (expected === 'no_stream' ? current === -1 : BigInt(current) === expected);
    if (!ok) throw Object.assign(new Error('wrong expected version'), { type: 'wrong-expected-version', actualVersion: current === -1 ? 'no_stream' : BigInt(current) });
    const written = events.map((e) => this.record(stream, e.type, e.data));
    // The answer carries a position for the write as a whole (here the first event's, as a server may).
    return { success: true, nextExpectedRevision: written.at(-1)!.event.revision, position: written[0]!.event.position };
  }

  async dispose() {
    this.disposed = true;
  }
}

function matches(filter: unknown, streamId: string): boolean {
  const f = filter as { prefixes?: string[]; regex?: string };
  if (f.prefixes) return f.prefixes.some((p) => streamId.startsWith(p));
  return new RegExp(f.regex!).test(streamId);
}

const fakeStore = (fake: FakeClient, prefix = '') =>
  new EventStoreDbStore(fake as unknown as EventStoreDBClient, { streamPrefix: prefix, silenceMs: 60_000 });

test('eventstoredb (stand-in client): a failed subscription is replaced after the last event delivered; system events never reach the consumer', async () => {
  const fake = new FakeClient();
  const store = fakeStore(fake);
  fake.record('video-1');
  fake.record('video-1', '$>'); // a link in a stream of ours: not ours to deliver
  fake.record('video-2');
  const seen: RecordedEvent[] = [];
  const sub = store.subscribeAll(null, { batchSize: 10 }).subscribe((page) => seen.push(...page));
  try {
    await waitFor(() => seen.length === 2);
    assert.deepEqual(fake.subscriptions[0]!.fromPosition, 'start');
    // The filter asks the server for non-system streams only.
    const filter = fake.subscriptions[0]!.filter as ReturnType<typeof streamNameFilter>;
    assert.equal(filter.filterOn, 'streamName');
    assert.equal((filter as { regex?: string }).regex, '^[^$]');
    fake.subscriptions[0]!.stream.destroy(Object.assign(new Error('14 UNAVAILABLE: Connection dropped'), { type: 'unavailable' }));
    await waitFor(() => fake.subscriptions.length === 2, 3000);
    // Exclusive: from the last event delivered, and it is not delivered again.
    assert.deepEqual(fake.subscriptions[1]!.fromPosition, seen[1]!.position);
    fake.record('$$video-3', '$metadata');
    fake.record('video-3', 'E', { live: true });
    await waitFor(() => seen.length === 3);
    // A duplicate would be delivered before an event recorded after all of them.
    fake.record('video-4', 'E', { fence: true });
    await waitFor(() => seen.length >= 4);
    assert.deepEqual(seen.map((e) => e.streamId), ['video-1', 'video-2', 'video-3', 'video-4']);
  } finally {
    sub.unsubscribe();
    await store.close();
  }
  assert.equal(fake.disposed, false, 'a client given by the caller is the caller to dispose');
});

test('eventstoredb (stand-in client): a prefixed store reads and subscribes to its own streams only', async () => {
  const fake = new FakeClient();
  const store = fakeStore(fake, 'ta-');
  fake.record('tb-video-1');
  const written = await store.append('video-1', [{ type: 'E', data: { n: 1 } }], 'no_stream');
  fake.record('tb-video-1');
  fake.record('$$ta-video-1', '$metadata');
  assert.deepEqual(await store.headPosition(), written.position);
  assert.deepEqual((await store.readStream('video-1')).map((e) => [e.streamId, e.data]), [['video-1', { n: 1 }]]);
  assert.deepEqual(await store.readStream('nothing'), []);
  assert.equal(await store.countEvents(), 1);
  const seen: RecordedEvent[] = [];
  const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
  try {
    await waitFor(() => seen.length === 1);
    assert.deepEqual((fake.subscriptions[0]!.filter as { prefixes: string[] }).prefixes, ['ta-']);
  } finally {
    sub.unsubscribe();
    await store.close();
  }
});

test('eventstoredb (stand-in client): appendMany reports conflicts per stream in input order; a transient failure is retried with the same event ids', async () => {
  const fake = new FakeClient();
  const store = fakeStore(fake);
  await store.append('b', [{ type: 'E', data: 0 }], 'no_stream');
  fake.failAppends.set('c', [Object.assign(new Error('deadline'), { type: 'deadline-exceeded' })]);
  const results = await store.appendMany([
    { streamId: 'a', expectedRevision: 'no_stream', events: [{ type: 'E', data: 1 }] },
    { streamId: 'b', expectedRevision: 'no_stream', events: [{ type: 'E', data: 1 }] },
    { streamId: 'c', expectedRevision: 'any', events: [{ type: 'E', data: 1 }, { type: 'E', data: 2 }] },
    { streamId: 'd', expectedRevision: 4n, events: [{ type: 'E', data: 1 }] },
  ]);
  assert.deepEqual(results.map((r) => [r.streamId, r.ok]), [['a', true], ['b', false], ['c', true], ['d', false]]);
  const [, b, c, d] = results;
  assert.ok(!b!.ok && 'conflict' in b && !d!.ok && 'conflict' in d && c!.ok);
  assert.equal(b.conflict.actual, 0n);
  assert.equal(d.conflict.actual, 'no_stream');
  assert.equal(c.result.nextExpectedRevision, 1n);
  // Several events: the position is the last one's, as readers see it.
  assert.deepEqual(c.result.position, (await store.readStream('c'))[1]!.position);
  const attempts = fake.appendCalls.filter((call) => call.stream === 'c');
  assert.equal(attempts.length, 2);
  assert.deepEqual(attempts[1]!.ids, attempts[0]!.ids, 'the retry is the same write');
  assert.deepEqual(fake.appendCalls.find((call) => call.stream === 'd')!.expectedRevision, 4n);

  // Refused before anything is sent.
  const before = fake.appendCalls.length;
  await assert.rejects(store.appendMany([{ streamId: 'x', expectedRevision: 'any', events: [{ type: 'E', data: 1 }] }, { streamId: 'x', expectedRevision: 'any', events: [{ type: 'E', data: 1 }] }]), /twice/);
  await assert.rejects(store.append('$settings', [{ type: 'E', data: 1 }], 'any'), /\$-prefixed/);
  await assert.rejects(store.append('y', [], 'any'), /no events/);
  assert.equal(fake.appendCalls.length, before);
  assert.deepEqual(await store.appendMany([]), []);
  await store.close();
});

test('eventstoredb (stand-in client): appendMany with one stream failing reports the streams written as written and that one failed; with none written it rejects', async () => {
  const fake = new FakeClient();
  const store = fakeStore(fake);
  // Unavailable on every attempt: the append's own retries do not get past it.
  const unavailable = Object.assign(new Error('server unavailable'), { type: 'unavailable' });
  fake.failAppends.set('x', [unavailable, unavailable, unavailable]);
  const e = [{ type: 'E', data: 1 }];
  const results = await store.appendMany([
    { streamId: 'a', expectedRevision: 'no_stream', events: e },
    { streamId: 'x', expectedRevision: 'no_stream', events: e },
    { streamId: 'b', expectedRevision: 'no_stream', events: e },
    { streamId: 'c', expectedRevision: 3n, events: e },
  ]);
  assert.deepEqual(results.map((r) => [r.streamId, r.ok, !r.ok && 'failed' in r]), [['a', true, false], ['x', false, true], ['b', true, false], ['c', false, false]]);
  const [a, x, b, c] = results;
  assert.ok(a!.ok && b!.ok && !x!.ok && 'failed' in x && !c!.ok && 'conflict' in c);
  assert.equal(x.failed, unavailable);
  assert.equal(appendError(x), unavailable);
  assert.ok(appendError(c) instanceof WrongExpectedRevision);
  assert.deepEqual(a.result.position, (await store.readStream('a'))[0]!.position);
  assert.deepEqual(b.result.position, (await store.readStream('b'))[0]!.position);
  assert.deepEqual(await store.readStream('x'), []);

  // Nothing written (a conflict and an outage): the call fails as a whole, with the failure.
  const refused = Object.assign(new Error('access denied'), { type: 'access-denied' });
  fake.failAppends.set('y', [refused]);
  await assert.rejects(
    store.appendMany([
      { streamId: 'a', expectedRevision: 'no_stream', events: e },
      { streamId: 'y', expectedRevision: 'no_stream', events: e },
    ]),
    (error) => error === refused,
  );
  await store.close();
});

test('eventstoredb (stand-in client) under group commit: the appends batched with one that fails resolve as written, only the failed one rejects', async () => {
  const fake = new FakeClient();
  const inner = fakeStore(fake);
  const batches: string[][] = [];
  const counted: EventStore = Object.assign(Object.create(inner) as EventStore, {
    appendMany: (appends: readonly StreamAppend[]) => (batches.push(appends.map((a) => a.streamId)), inner.appendMany(appends)),
  });
  const store = new BatchingEventStore(counted);
  const unavailable = Object.assign(new Error('server unavailable'), { type: 'unavailable' });
  fake.failAppends.set('video-x', [unavailable, unavailable, unavailable]);
  const e = [{ type: 'VideoTracked', data: {} }];
  const outcomes = await Promise.allSettled([
    store.append('video-first', e, 'no_stream'), // goes alone at once
    store.append('video-b', e, 'no_stream'), // these three wait and go together
    store.append('video-c', e, 'no_stream'),
    store.append('video-x', e, 'no_stream'),
  ]);
  assert.deepEqual(batches, [['video-first'], ['video-b', 'video-c', 'video-x']]);
  const streams = ['video-first', 'video-b', 'video-c', 'video-x'];
  const inLog = await Promise.all(streams.map(async (s) => (await inner.readStream(s)).length > 0));
  assert.deepEqual(inLog, [true, true, true, false]);
  assert.deepEqual(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
  assert.equal((outcomes[3] as PromiseRejectedResult).reason, unavailable);
  for (const [i, s] of streams.slice(0, 3).entries()) {
    const written = (outcomes[i] as PromiseFulfilledResult<AppendResult>).value;
    assert.deepEqual(written.position, (await inner.readStream(s))[0]!.position, s);
  }
  await store.close();
});

test('eventstoredb: a store made from a connection string connects lazily, disposes its client, and refuses work once closed', async () => {
  const store = new EventStoreDbStore('esdb://127.0.0.1:1?tls=false');
  await store.close();
  await assert.rejects(store.readStream('s'), /closed/);
  await assert.rejects(
    new Promise((_, reject) => store.subscribeAll(null).subscribe({ error: reject })),
    /closed/,
  );
  assert.throws(() => new EventStoreDbStore('esdb://127.0.0.1:1?tls=false', { streamPrefix: '$x' }), /must not start with \$/);
});

// ---------------------------------------------------------------------------

type Server = { url: string; stop?: () => Promise<void> } | { skip: string };

async function findServer(): Promise<Server> {
  if (process.env.EVENTSTORE_URL) return { url: process.env.EVENTSTORE_URL };
  if (!(await dockerAnswers())) return { skip: NO_SERVER };
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer(IMAGE)
    .withEnvironment({
      EVENTSTORE_INSECURE: 'true',
      EVENTSTORE_MEM_DB: 'true',
      EVENTSTORE_CLUSTER_SIZE: '1',
      EVENTSTORE_RUN_PROJECTIONS: 'None',
    })
    .withExposedPorts(2113)
    .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
    .withStartupTimeout(120_000)
    .start();
  return {
    url: `esdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`,
    stop: async () => void (await container.stop()),
  };
}

/**
 * Whether a Docker engine answers, in well under 2 s when there is none: without DOCKER_HOST,
 * a testcontainers config or a socket where engines put one, there is nothing to ask.
 */
async function dockerAnswers(): Promise<boolean> {
  const home = os.homedir();
  const candidates = [
    '/var/run/docker.sock',
    path.join(home, '.docker/run/docker.sock'),
    path.join(home, '.docker/desktop/docker.sock'),
    process.env.XDG_RUNTIME_DIR ? path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock') : '',
    process.getuid ? `/run/user/${process.getuid()}/docker.sock` : '',
    path.join(home, '.testcontainers.properties'),
  ].filter(Boolean);
  if (!process.env.DOCKER_HOST && !candidates.some((file) => fs.existsSync(file))) return false;
  const { getContainerRuntimeClient } = await import('testcontainers');
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      getContainerRuntimeClient().then(() => true, () => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), 2000))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The events of a subscription until `count` have come, plus whatever else comes within `graceMs`. */
async function firstPages(source: ReturnType<EventStoreDbStore['subscribeAll']>, count: number, graceMs: number): Promise<RecordedEvent[]> {
  const seen: RecordedEvent[] = [];
  const sub = source.subscribe((page) => seen.push(...page));
  try {
    await waitFor(() => seen.length >= count, 10_000);
    // Not a synchronization: the callers check that nothing MORE comes, which has no event to wait for.
    await sleep(graceMs);
    return seen;
  } finally {
    sub.unsubscribe();
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) assert.fail(`timed out after ${timeoutMs} ms waiting for ${check}`);
    await sleep(5);
  }
}
