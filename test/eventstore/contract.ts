// The EventStore contract, written once and run against every adapter. Each
// test gets a fresh, empty store from `make`.
import assert from 'node:assert/strict';
import { test as nodeTest, type TestContext } from 'node:test';
import { until } from '../support/wait.ts';
import type { Observable, Subscription } from 'rxjs';
import {
  comparePositions,
  formatPosition,
  parsePosition,
  WrongExpectedRevision,
  type EventData,
  type EventStore,
  type RecordedEvent,
} from '../../src/eventstore/port.ts';

export interface ContractFixture {
  readonly store: EventStore;
  teardown(): Promise<void>;
  /**
   * Starts an append whose transaction stays open until commit() is called
   * (commit() may be called more than once).
   * Only adapters with client-side transactions have it; without it the
   * late-commit test is skipped.
   */
  beginAppend?(streamId: string, events: readonly EventData[]): Promise<{ commit(): Promise<void> }>;
}

export interface ContractOptions {
  /** Reports every test of the suite as skipped, with this reason (e.g. no server to run against). */
  readonly skip?: string;
}

export function eventStoreContract(name: string, make: () => Promise<ContractFixture>, options: ContractOptions = {}): void {
  const test = (title: string, fn: (t: TestContext) => Promise<void>) => nodeTest(title, { skip: options.skip }, fn);
  /** Runs body against a fresh store and always tears it down. */
  const withStore = (body: (fixture: ContractFixture, t: TestContext) => Promise<void>) => async (t: TestContext) => {
    const fixture = await make();
    try {
      await body(fixture, t);
    } finally {
      await fixture.teardown();
    }
  };

  test(`${name}: append then readStream round-trips type, data, metadata and revisions`, withStore(async ({ store }) => {
    const data = { views: '9007199254740993', nested: { list: [1, 'two', null], ok: true }, text: 'héllo "quoted" \\ {braces} \\u0000 as text' };
    const result = await store.append('video-1', [
      { type: 'VideoTracked', data, metadata: { correlationId: 'c-1' } },
      { type: 'SnapshotRecorded', data: { slot: 0 } },
      { type: 'Bare', data: null },
    ], 'no_stream');
    assert.equal(result.nextExpectedRevision, 2n);

    const events = await store.readStream('video-1');
    assert.deepEqual(events.map((e) => [e.streamId, e.revision, e.type]), [
      ['video-1', 0n, 'VideoTracked'],
      ['video-1', 1n, 'SnapshotRecorded'],
      ['video-1', 2n, 'Bare'],
    ]);
    assert.equal(events[2]!.data, null);
    assert.deepEqual(events[0]!.data, data);
    assert.deepEqual(events[0]!.metadata, { correlationId: 'c-1' });
    assert.deepEqual(events[1]!.metadata, {});
    assert.match(events[0]!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.notEqual(events[0]!.id, events[1]!.id);
    assert.ok(events[0]!.recordedAt instanceof Date);
    assert.ok(comparePositions(events[0]!.position, events[1]!.position) < 0);
    assert.deepEqual(result.position, events[2]!.position);
  }));

  test(`${name}: readStream of a missing stream returns []`, withStore(async ({ store }) => {
    assert.deepEqual(await store.readStream('nobody-here'), []);
  }));

  test(`${name}: expected revision no_stream, exact and any; conflicts throw WrongExpectedRevision`, withStore(async ({ store }) => {
    const one = [{ type: 'E', data: {} }];
    await store.append('s', one, 'no_stream');

    const again = await rejects(store.append('s', one, 'no_stream'));
    assert.equal(again.streamId, 's');
    assert.equal(again.expected, 'no_stream');
    assert.equal(again.actual, 0n);

    assert.equal((await store.append('s', one, 0n)).nextExpectedRevision, 1n);
    const stale = await rejects(store.append('s', one, 0n));
    assert.equal(stale.actual, 1n);
    const ahead = await rejects(store.append('s', one, 5n));
    assert.equal(ahead.actual, 1n);

    const missing = await rejects(store.append('missing', one, 0n));
    assert.equal(missing.actual, 'no_stream');

    assert.equal((await store.append('s', one, 'any')).nextExpectedRevision, 2n);
    assert.equal((await store.append('fresh', one, 'any')).nextExpectedRevision, 0n);
    // Rejected appends wrote nothing.
    assert.deepEqual((await store.readStream('s')).map((e) => e.revision), [0n, 1n, 2n]);
    assert.deepEqual(await store.readStream('missing'), []);
  }));

  test(`${name}: appendMany is atomic per stream and reports each stream in input order`, withStore(async ({ store }) => {
    await store.append('b', [{ type: 'E', data: { n: 0 } }], 'no_stream');
    await store.append('c', [{ type: 'E', data: { n: 0 } }], 'no_stream');
    await store.append('e', [{ type: 'E', data: { n: 0 } }], 'no_stream');

    const results = await store.appendMany([
      { streamId: 'a', expectedRevision: 'no_stream', events: [{ type: 'E', data: { n: 1 } }] },
      { streamId: 'b', expectedRevision: 'no_stream', events: [{ type: 'E', data: { n: 1 } }, { type: 'E', data: { n: 2 } }] },
      { streamId: 'c', expectedRevision: 0n, events: [{ type: 'E', data: { n: 1 } }, { type: 'E', data: { n: 2 } }] },
      { streamId: 'd', expectedRevision: 3n, events: [{ type: 'E', data: { n: 1 } }] },
      { streamId: 'e', expectedRevision: 'any', events: [{ type: 'E', data: { n: 1 } }] },
    ]);

    assert.deepEqual(results.map((r) => [r.streamId, r.ok]), [['a', true], ['b', false], ['c', true], ['d', false], ['e', true]]);
    const [a, b, c, d, e] = results;
    assert.ok(a!.ok && c!.ok && e!.ok && !b!.ok && 'conflict' in b && !d!.ok && 'conflict' in d);
    assert.equal(a.result.nextExpectedRevision, 0n);
    assert.equal(c.result.nextExpectedRevision, 2n);
    assert.equal(e.result.nextExpectedRevision, 1n);
    assert.ok(b.conflict instanceof WrongExpectedRevision);
    assert.equal(b.conflict.actual, 0n);
    assert.equal(d.conflict.actual, 'no_stream');

    assert.deepEqual((await store.readStream('b')).map((x) => x.data), [{ n: 0 }]);
    assert.deepEqual((await store.readStream('c')).map((x) => x.data), [{ n: 0 }, { n: 1 }, { n: 2 }]);
    assert.deepEqual(await store.readStream('d'), []);
    const cEvents = await store.readStream('c');
    assert.deepEqual(c.result.position, cEvents[2]!.position);
    assert.deepEqual(await store.appendMany([]), []);
  }));

  test(`${name}: headPosition is null on an empty log, then the last event's position`, withStore(async ({ store }) => {
    assert.equal(await store.headPosition(), null);
    await store.append('x', [{ type: 'E', data: {} }], 'no_stream');
    const last = await store.append('y', [{ type: 'E', data: {} }, { type: 'E', data: {} }], 'no_stream');
    // Until: a write still open elsewhere on the server (another test's) holds the head back a moment.
    await until('headPosition to be the last append', async () => ((await store.headPosition())?.prepare === last.position.prepare ? true : undefined), 10_000);
    assert.deepEqual(await store.headPosition(), last.position);
  }));

  test(`${name}: readAll reads one page after a position (exclusive); countEventsAfter counts up to a cap`, withStore(async ({ store }) => {
    assert.deepEqual(await store.readAll(null, 10), []);
    assert.equal(await store.countEventsAfter(null, 10), 0);
    for (let i = 0; i < 6; i++) await store.append(`r-${i % 2}`, [{ type: 'E', data: { i } }], 'any');
    const first = await store.readAll(null, 4);
    assert.deepEqual(first.map((e) => (e.data as { i: number }).i), [0, 1, 2, 3]);
    assertStrictlyIncreasing(first);
    const rest = await store.readAll(first[3]!.position, 10);
    assert.deepEqual(rest.map((e) => (e.data as { i: number }).i), [4, 5]);
    assert.equal(await store.countEventsAfter(null, 100), 6);
    assert.equal(await store.countEventsAfter(first[1]!.position, 100), 4);
    assert.equal(await store.countEventsAfter(null, 3), 3, 'no further than the cap');
    assert.equal(await store.countEventsAfter(rest[1]!.position, 100), 0);
  }));

  test(`${name}: subscribeAll from null replays everything, in pages, in global order`, withStore(async ({ store }) => {
    for (let i = 0; i < 7; i++) await store.append(`s-${i % 3}`, [{ type: 'E', data: { i } }], 'any');
    const pages: RecordedEvent[][] = [];
    const events = await collect(store.subscribeAll(null, { batchSize: 3 }), 7, (page) => pages.push(page));
    assert.deepEqual(events.map((e) => (e.data as { i: number }).i), [0, 1, 2, 3, 4, 5, 6]);
    assert.ok(pages.every((p) => p.length <= 3), 'pages respect batchSize');
    assertStrictlyIncreasing(events);
  }));

  test(`${name}: subscribeAll from a position starts after it (exclusive)`, withStore(async ({ store }) => {
    for (let i = 0; i < 6; i++) await store.append('s', [{ type: 'E', data: { i } }], 'any');
    const all = await store.readStream('s');
    const events = await collect(store.subscribeAll(all[2]!.position), 3);
    assert.deepEqual(events.map((e) => (e.data as { i: number }).i), [3, 4, 5]);
    // A position that went through its text form works the same.
    const again = await collect(store.subscribeAll(parsePosition(formatPosition(all[4]!.position))), 1);
    assert.deepEqual(again.map((e) => e.revision), [5n]);
  }));

  test(`${name}: subscribeAll delivers events appended after it went live`, withStore(async ({ store }) => {
    await store.append('before', [{ type: 'E', data: {} }], 'no_stream');
    const seen: RecordedEvent[] = [];
    let live!: () => void;
    const caughtUp = new Promise<void>((resolve) => (live = resolve));
    const sub = store.subscribeAll(null).subscribe((page) => {
      seen.push(...page);
      if (seen.length >= 1) live();
    });
    try {
      await withTimeout(caughtUp, 5000, 'catch-up');
      await store.append('after', [{ type: 'E', data: { live: true } }], 'no_stream');
      await waitFor(() => seen.length === 2, 5000, 'live event');
      assert.deepEqual(seen.map((e) => e.streamId), ['before', 'after']);
    } finally {
      sub.unsubscribe();
    }
  }));

  test(`${name}: a slow consumer's ready() holds the reader back`, withStore(async ({ store }) => {
    for (let i = 0; i < 10; i++) await store.append('s', [{ type: 'E', data: { i } }], 'any');
    let open!: () => void;
    let gate = new Promise<void>((resolve) => (open = resolve));
    let calls = 0;
    const pages: number[] = [];
    const sub = store
      .subscribeAll(null, {
        batchSize: 2,
        ready: () => {
          calls++;
          return calls === 1 ? Promise.resolve() : gate;
        },
      })
      .subscribe((page) => pages.push(page.length));
    try {
      await waitFor(() => pages.length === 1, 5000, 'first page');
      // The reader asks ready() before each read: once it asked the second time it waits on the gate.
      await waitFor(() => calls >= 2, 5000, 'the reader to ask ready() before its second page');
      assert.deepEqual(pages, [2], 'no page is read while ready() is pending');
      open();
      gate = Promise.resolve();
      await waitFor(() => pages.reduce((a, b) => a + b, 0) === 10, 5000, 'all pages');
    } finally {
      sub.unsubscribe();
    }
  }));

  test(`${name}: concurrent writers; a subscriber sees every event once, each stream in revision order`, withStore(async ({ store }) => {
    const writers = 8;
    const appendsPerWriter = 200;
    const total = writers * appendsPerWriter;
    const seen: RecordedEvent[] = [];
    const sub = store.subscribeAll(null, { batchSize: 100 }).subscribe((page) => seen.push(...page));
    try {
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < appendsPerWriter; i++) {
            const event = { type: 'E', data: { w, i } };
            if (i % 4 === 0) {
              // A stream every writer fights over, with optimistic retries.
              await appendWithRetry(store, 'shared', event);
            } else if (i % 4 === 1) {
              await store.append('shared-any', [event], 'any');
            } else {
              await store.append(`writer-${w}`, [event], i === 2 ? 'no_stream' : 'any');
            }
          }
        }),
      );
      await assertEachOnceInOrder(store, seen, total);
      const revisions = new Map<string, bigint[]>();
      for (const e of seen) revisions.set(e.streamId, [...(revisions.get(e.streamId) ?? []), e.revision]);
      for (const [stream, list] of revisions) {
        assert.deepEqual(list, list.map((_, k) => BigInt(k)), `stream ${stream} delivered in revision order without gaps`);
      }
      assert.equal(revisions.get('shared')!.length, writers * (appendsPerWriter / 4));
    } finally {
      sub.unsubscribe();
    }
  }));

  test(`${name}: subscribers of one store, with other page sizes and paces, each see every event once and in order`, withStore(async ({ store }) => {
    // The PostgreSQL adapter shares its reads between a process's subscriptions (log-tail.ts):
    // none may lose, repeat or reorder an event for another's sake.
    const total = 1_200;
    const readers = [
      { batchSize: 100, slow: false },
      { batchSize: 100, slow: true },
      { batchSize: 37, slow: false },
    ].map(({ batchSize, slow }) => {
      const seen: RecordedEvent[] = [];
      let pages = 0;
      const ready = slow ? () => (pages % 3 === 0 ? sleep(5) : Promise.resolve()) : undefined;
      const sub = store.subscribeAll(null, { batchSize, ready }).subscribe((page) => {
        pages++;
        seen.push(...page);
      });
      return { seen, sub };
    });
    try {
      await Promise.all(
        Array.from({ length: 6 }, async (_, w) => {
          for (let i = 0; i < total / 6 / 4; i++) {
            await store.appendMany(Array.from({ length: 4 }, (_, k) => ({ streamId: `paced-${w}-${i}-${k}`, events: [{ type: 'E', data: { w, i, k } }], expectedRevision: 'no_stream' as const })));
          }
        }),
      );
      for (const { seen } of readers) await assertEachOnceInOrder(store, seen, total);
      // Later fences (each reader's own) reach every reader: only the test's events are compared.
      const order = (seen: RecordedEvent[]) => seen.filter((e) => !e.streamId.startsWith(FENCE)).map((e) => e.id).join();
      assert.equal(order(readers[1]!.seen), order(readers[0]!.seen), 'the same order for every subscriber');
      assert.equal(order(readers[2]!.seen), order(readers[0]!.seen), 'the same order for every subscriber');
    } finally {
      for (const { sub } of readers) sub.unsubscribe();
    }
  }));

  test(`${name}: racing multi-event appends to the same streams land whole or not at all`, withStore(async ({ store }) => {
    const writers = 6;
    const rounds = 15;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < rounds; i++) {
          // One to three events (by writer) to each of two contested streams in one batch, each
          // stream at the revision the writer last read; a writer that lost a stream retries it.
          let pending = ['race-a', 'race-b'];
          for (let attempt = 0; pending.length > 0; attempt++) {
            assert.ok(attempt < 1000, 'a writer never got through');
            const appends = await Promise.all(
              pending.map(async (streamId) => {
                const events = await store.readStream(streamId);
                return {
                  streamId,
                  expectedRevision: events.length === 0 ? ('no_stream' as const) : events[events.length - 1]!.revision,
                  events: Array.from({ length: (w % 3) + 1 }, (_, part) => ({ type: 'E', data: { w, i, part } })),
                };
              }),
            );
            const results = await store.appendMany(appends);
            pending = results.filter((r) => !r.ok).map((r) => r.streamId);
          }
        }
      }),
    );
    const expected = Array.from({ length: writers }, (_, w) => rounds * ((w % 3) + 1)).reduce((a, b) => a + b);
    for (const streamId of ['race-a', 'race-b']) {
      const events = await store.readStream(streamId);
      assert.equal(events.length, expected);
      let start = 0;
      events.forEach((event, k) => {
        assert.equal(event.revision, BigInt(k), `${streamId} has no gaps`);
        const data = event.data as { w: number; i: number; part: number };
        if (data.part === 0) start = k;
        const first = events[start]!.data as { w: number; i: number };
        assert.deepEqual(data, { w: first.w, i: first.i, part: k - start }, `${streamId}: each append's events are together, in order`);
        if (k === events.length - 1 || (events[k + 1]!.data as { part: number }).part === 0) {
          assert.equal(k - start + 1, (first.w % 3) + 1, `${streamId}: every append landed whole`);
        }
      });
    }
  }));

  test(`${name}: an event whose transaction commits late is not skipped`, withStore(async (fixture, t) => {
    const { store, beginAppend } = fixture;
    if (!beginAppend) return t.skip('the adapter has no client-side transactions');
    const seen: RecordedEvent[] = [];
    const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
    // 'late' is written first and committed last.
    const late = await beginAppend('late', [{ type: 'E', data: { late: true } }]);
    try {
      await store.append('early', [{ type: 'E', data: { early: true } }], 'no_stream');
      // Not a synchronization: the scenario. The subscriber polls (and could skip 'late') while
      // it is open; nothing to wait for but time, and a longer pause only makes it likelier.
      await sleep(300);
      await late.commit();
      await store.append('after', [{ type: 'E', data: {} }], 'no_stream');
      await waitFor(() => seen.length >= 3, 5000, 'three events');
      // Anything delivered twice would come before an event appended after all of them.
      await fence(store, seen);
      withoutFences(seen);
      assert.deepEqual(seen.map((e) => e.streamId).sort(), ['after', 'early', 'late']);
      // Delivered in increasing positions: a consumer that checkpoints as it
      // goes and resumes after its checkpoint can never miss one.
      assertStrictlyIncreasing(seen);
    } finally {
      sub.unsubscribe();
      await late.commit(); // idempotent: releases the transaction when an assertion failed first
    }
  }));

  test(`${name}: positions are bigints that survive their text form`, withStore(async ({ store }) => {
    const result = await store.append('s', [{ type: 'E', data: { big: '123456789012345678901234567890' } }], 'no_stream');
    assert.equal(typeof result.position.commit, 'bigint');
    assert.equal(typeof result.position.prepare, 'bigint');
    assert.equal(typeof result.nextExpectedRevision, 'bigint');
    assert.deepEqual(parsePosition(formatPosition(result.position)), result.position);
    const [event] = await store.readStream('s');
    assert.equal(typeof event!.revision, 'bigint');
    assert.equal((event!.data as { big: string }).big, '123456789012345678901234567890');
  }));

  test(`${name}: unsubscribing stops the subscription`, withStore(async ({ store }) => {
    const seen: RecordedEvent[] = [];
    const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
    await store.append('s', [{ type: 'E', data: {} }], 'no_stream');
    await waitFor(() => seen.length === 1, 5000, 'first event');
    sub.unsubscribe();
    await store.append('s', [{ type: 'E', data: {} }], 0n);
    // That nothing MORE arrives has no event to wait for: a second subscription that sees the
    // append proves it was deliverable, and the pause gives the unsubscribed one time to err.
    const other: RecordedEvent[] = [];
    const witness = store.subscribeAll(null).subscribe((page) => other.push(...page));
    try {
      await waitFor(() => other.length === 2, 5000, 'a second subscriber to see both events');
    } finally {
      witness.unsubscribe();
    }
    await sleep(300);
    assert.equal(seen.length, 1);
  }));
}

// ---------------------------------------------------------------------------

async function appendWithRetry(store: EventStore, streamId: string, event: EventData): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const events = await store.readStream(streamId);
    const expected = events.length === 0 ? ('no_stream' as const) : events[events.length - 1]!.revision;
    try {
      await store.append(streamId, [event], expected);
      return;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision)) throw error;
    }
  }
  throw new Error(`could not append to ${streamId}`);
}

async function rejects(promise: Promise<unknown>): Promise<WrongExpectedRevision> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WrongExpectedRevision, `expected WrongExpectedRevision, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a WrongExpectedRevision');
}

/** The first `count` events of a subscription (then unsubscribes). */
async function collect(
  source: Observable<RecordedEvent[]>,
  count: number,
  onPage?: (page: RecordedEvent[]) => void,
): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  let subscription: Subscription | undefined;
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        subscription = source.subscribe({
          next(page) {
            onPage?.(page);
            events.push(...page);
            if (events.length >= count) resolve();
          },
          error: reject,
        });
      }),
      10_000,
      `${count} events`,
    );
  } finally {
    subscription?.unsubscribe();
  }
  return events.slice(0, count);
}

/** `total` events reach `seen`, then nothing more of them: each once, in increasing positions (fences taken out). */
async function assertEachOnceInOrder(store: EventStore, seen: RecordedEvent[], total: number): Promise<void> {
  await waitFor(() => seen.length >= total, 30_000, `all ${total} events`);
  // Anything delivered twice would come before an event appended after all of them.
  await fence(store, seen);
  withoutFences(seen);
  assert.equal(seen.length, total);
  assert.equal(new Set(seen.map((e) => e.id)).size, total, 'every event exactly once');
  assertStrictlyIncreasing(seen);
}

function assertStrictlyIncreasing(events: readonly RecordedEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    assert.ok(
      comparePositions(events[i - 1]!.position, events[i]!.position) < 0,
      `positions must increase: ${formatPosition(events[i - 1]!.position)} then ${formatPosition(events[i]!.position)}`,
    );
  }
}

/**
 * Appends an event to a stream of its own and waits until `seen` holds it: every event the
 * subscription would deliver before it (a duplicate, a late one) has arrived by then.
 */
async function fence(store: EventStore, seen: RecordedEvent[]): Promise<void> {
  const streamId = `${FENCE}${seen.length}-${Date.now()}`;
  await store.append(streamId, [{ type: 'Fence', data: {} }], 'no_stream');
  await waitFor(() => seen.some((e) => e.streamId === streamId), 10_000, `the fence event ${streamId}`);
}

const FENCE = 'fence-';

/** Takes the fence events out of `seen` (in place), so assertions count only the test's own. */
function withoutFences(seen: RecordedEvent[]): void {
  const kept = seen.filter((e) => !e.streamId.startsWith(FENCE));
  seen.splice(0, seen.length, ...kept);
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
