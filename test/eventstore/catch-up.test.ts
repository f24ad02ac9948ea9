// The catch-up reader behind the EventStoreDB adapter's subscribeAll, driven by a fake log
// whose subscriptions fail, end, or go silent on command: pages, backpressure, and
// resubscription without duplicates or gaps.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { followCatchUp, type CatchUpItem, type CatchUpOptions, type CatchUpSource, type CatchUpStream, type ResubscribeReason } from '../../src/eventstore/catch-up.ts';
import { comparePositions, formatPosition, type Position, type RecordedEvent } from '../../src/eventstore/port.ts';
import { within } from '../support/wait.ts';

// Positions beyond 2^53, so that a Number() anywhere would show.
const BASE = 2n ** 60n;
const positionOf = (i: number): Position => ({ commit: BASE + BigInt(i) * 100n, prepare: BASE + BigInt(i) * 100n });

function eventAt(i: number): RecordedEvent {
  return {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    streamId: `s-${i % 3}`,
    revision: BigInt(Math.floor(i / 3)),
    position: positionOf(i),
    type: 'E',
    data: { i },
    metadata: {},
    recordedAt: new Date(0),
  };
}

/** What the n-th subscription (0-based) does after delivering `after` records. */
interface Fault {
  readonly after: number;
  readonly kind: 'throw' | 'end' | 'silent' | 'fatal';
}

interface FakeOptions {
  /** Per subscription, in order of opening; later ones behave. */
  readonly faults?: readonly (Fault | undefined)[];
  /** Replays the record at `after` too (an inclusive fromPosition). */
  readonly inclusive?: boolean;
  /** Records that are not this store's (stepped over, never delivered). */
  readonly foreign?: (i: number) => boolean;
  /** Tells the truth about the log to the silence check. */
  readonly probe?: boolean;
  /** Calls alive() every this many ms while open. */
  readonly heartbeatMs?: number;
  /** Each record takes this long to arrive (a slow network). */
  readonly latencyMs?: number;
}

/** A log in memory with subscriptions that misbehave as scripted. */
class FakeLog implements CatchUpSource {
  readonly items: CatchUpItem[] = [];
  readonly opened: (Position | null)[] = [];
  pulls = 0;
  open$ = 0;
  private wake = new Set<() => void>();
  hasEventsAfter?: (after: Position | null) => Promise<boolean>;

  constructor(readonly options: FakeOptions = {}) {
    if (options.probe) {
      this.hasEventsAfter = async (after) => this.items.some((item) => item.event && (after === null || comparePositions(item.position, after) > 0));
    }
  }

  append(count: number): void {
    for (let k = 0; k < count; k++) {
      const i = this.items.length;
      this.items.push(this.options.foreign?.(i) ? { position: positionOf(i) } : { position: positionOf(i), event: eventAt(i) });
    }
    for (const wake of this.wake) wake();
  }

  isTransient = (error: unknown) => !(error instanceof Error && error.message === 'fatal');

  open(after: Position | null, alive: () => void): CatchUpStream {
    const fault = this.options.faults?.[this.opened.length];
    this.opened.push(after);
    this.open$++;
    let closed = false;
    let release = () => {};
    const closedSignal = new Promise<void>((resolve) => (release = resolve));
    const heartbeat = this.options.heartbeatMs ? setInterval(alive, this.options.heartbeatMs) : undefined;
    const log = this;
    const inclusive = this.options.inclusive;
    return {
      async *[Symbol.asyncIterator]() {
        let index = after === null ? 0 : log.items.findIndex((item) => (inclusive ? comparePositions(item.position, after) >= 0 : comparePositions(item.position, after) > 0));
        if (index < 0) index = log.items.length;
        let delivered = 0;
        alive(); // confirmation
        while (!closed) {
          if (fault && delivered === fault.after) {
            if (fault.kind === 'throw') throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
            if (fault.kind === 'fatal') throw new Error('fatal');
            if (fault.kind === 'end') return;
            await closedSignal; // silent: a half-open connection, until closed
            return;
          }
          if (index < log.items.length) {
            if (log.options.latencyMs) await sleep(log.options.latencyMs);
            log.pulls++;
            delivered++;
            yield log.items[index++]!;
          } else {
            await new Promise<void>((resolve) => {
              log.wake.add(resolve);
              void closedSignal.then(resolve);
            });
          }
        }
      },
      close() {
        closed = true;
        clearInterval(heartbeat);
        release();
      },
    };
  }
}

interface Run {
  readonly pages: RecordedEvent[][];
  readonly resubscriptions: { after: Position | null; reason: ResubscribeReason; delayMs: number }[];
  readonly done: Promise<void>;
  stop(): Promise<void>;
  events(): RecordedEvent[];
}

function run(source: CatchUpSource, from: Position | null, options: Partial<CatchUpOptions> = {}): Run {
  const controller = new AbortController();
  const pages: RecordedEvent[][] = [];
  const resubscriptions: Run['resubscriptions'] = [];
  const done = followCatchUp(
    source,
    from,
    {
      batchSize: 4,
      silenceMs: 100,
      backoffMs: 1,
      maxBackoffMs: 8,
      onResubscribe: ({ after, reason, delayMs }) => resubscriptions.push({ after, reason, delayMs }),
      ...options,
    },
    (page) => pages.push(page),
    controller.signal,
  );
  return {
    pages,
    resubscriptions,
    done,
    async stop() {
      controller.abort();
      await done;
    },
    events: () => pages.flat(),
  };
}

function assertExactlyOnceInOrder(events: readonly RecordedEvent[], expected: readonly number[]): void {
  assert.deepEqual(events.map((e) => (e.data as { i: number }).i), expected);
  for (let k = 1; k < events.length; k++) assert.ok(comparePositions(events[k - 1]!.position, events[k]!.position) < 0);
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

test('catch-up: pages of at most batchSize, in order; a partial page goes out once the source is quiet', async () => {
  const log = new FakeLog();
  log.append(10);
  const r = run(log, null, { batchSize: 4 });
  try {
    await waitFor(() => r.events().length === 10);
    assert.deepEqual(r.pages.map((p) => p.length), [4, 4, 2]);
    log.append(1); // live
    await waitFor(() => r.events().length === 11);
    assertExactlyOnceInOrder(r.events(), range(0, 11));
    assert.equal(log.open$, 1);
    assert.deepEqual(r.resubscriptions, []);
  } finally {
    await r.stop();
  }
});

test('catch-up: from a position is exclusive', async () => {
  const log = new FakeLog();
  log.append(6);
  const r = run(log, positionOf(2));
  try {
    await waitFor(() => r.events().length === 3);
    assertExactlyOnceInOrder(r.events(), [3, 4, 5]);
    assert.deepEqual(log.opened, [positionOf(2)]);
  } finally {
    await r.stop();
  }
});

test('catch-up: a subscription that fails midway is replaced after the last event delivered: no duplicate, no gap', async () => {
  const log = new FakeLog({ faults: [{ after: 6, kind: 'throw' }, { after: 3, kind: 'throw' }] });
  log.append(20);
  const r = run(log, null, { batchSize: 4 });
  try {
    await waitFor(() => r.events().length === 20, 'all 20 events');
    // A duplicate would be delivered before an event appended after all of them.
    log.append(1);
    await waitFor(() => r.events().length >= 21, 'the event appended last');
    assertExactlyOnceInOrder(r.events(), range(0, 21));
    // The events gathered before the failure were handed over, and the next subscription started right after them.
    assert.deepEqual(log.opened, [null, positionOf(5), positionOf(8)]);
    assert.deepEqual(r.resubscriptions.map((x) => x.reason), ['error', 'error']);
    assert.deepEqual(r.resubscriptions.map((x) => formatPosition(x.after!)), [formatPosition(positionOf(5)), formatPosition(positionOf(8))]);
  } finally {
    await r.stop();
  }
});

test('catch-up: a subscription that goes silent (half-open connection) is replaced when the log has more', async () => {
  const log = new FakeLog({ faults: [{ after: 5, kind: 'silent' }], probe: true });
  log.append(12);
  const r = run(log, null, { batchSize: 100, silenceMs: 80 });
  try {
    await waitFor(() => r.events().length === 5, 'the 5 events before the silence');
    const silentSince = performance.now();
    await sleep(40);
    // On a loaded machine the 40 ms pause can stretch past silenceMs: then replacing is right.
    if (performance.now() - silentSince < 60) assert.equal(log.open$, 1, 'not replaced before silenceMs');
    await waitFor(() => r.events().length === 12, 'all 12 events after the replacement', 2000);
    assertExactlyOnceInOrder(r.events(), range(0, 12));
    assert.deepEqual(r.resubscriptions.map((x) => x.reason), ['silence']);
    assert.deepEqual(log.opened, [null, positionOf(4)]);
  } finally {
    await r.stop();
  }
});

test('catch-up: silence on an idle log is not a failure (nothing to miss), nor is silence with signs of life', async () => {
  const idle = new FakeLog({ probe: true });
  idle.append(3);
  const r = run(idle, null, { silenceMs: 30 });
  try {
    await waitFor(() => r.events().length === 3, 'the 3 events of the idle log');
    // Not a synchronization: several silenceMs pass with nothing to wait for (a longer pause only tests more).
    await sleep(200);
    assert.equal(idle.open$, 1);
    idle.append(1);
    await waitFor(() => r.events().length === 4);
  } finally {
    await r.stop();
  }

  // No probe: only the heartbeats (checkpoints, caught-up) keep it.
  const beating = new FakeLog({ heartbeatMs: 10 });
  const b = run(beating, null, { silenceMs: 50 });
  try {
    // Not a synchronization: five silenceMs of heartbeats only, nothing else happens.
    await sleep(250);
    assert.equal(beating.open$, 1);
    assert.deepEqual(b.resubscriptions, []);
  } finally {
    await b.stop();
  }

  // No probe and no heartbeat: silence replaces the subscription, from where it was.
  const mute = new FakeLog();
  mute.append(2);
  const m = run(mute, null, { silenceMs: 50 });
  try {
    await waitFor(() => mute.opened.length >= 3, 'two replacements of the mute subscription', 2000);
    assert.ok(m.resubscriptions.every((x) => x.reason === 'silence'));
    assert.deepEqual(mute.opened.slice(1, 3), [positionOf(1), positionOf(1)]);
    assertExactlyOnceInOrder(m.events(), [0, 1]);
  } finally {
    await m.stop();
  }
});

test('catch-up: a source that replays the position it was given (inclusive) delivers nothing twice', async () => {
  const log = new FakeLog({ inclusive: true, faults: [{ after: 3, kind: 'end' }, { after: 4, kind: 'throw' }] });
  log.append(10);
  const r = run(log, positionOf(0), { batchSize: 2 });
  try {
    await waitFor(() => r.events().length === 9, 'events 1 to 9');
    // A duplicate would be delivered before an event appended after all of them.
    log.append(1);
    await waitFor(() => r.events().length >= 10, 'the event appended last');
    assertExactlyOnceInOrder(r.events(), range(1, 11));
    assert.deepEqual(r.resubscriptions.map((x) => x.reason), ['ended', 'error']);
  } finally {
    await r.stop();
  }
});

test("catch-up: records that are not this store's are stepped over, and a new subscription starts after them", async () => {
  const log = new FakeLog({ foreign: (i) => i % 2 === 1, faults: [{ after: 4, kind: 'throw' }] });
  log.append(10);
  const r = run(log, null, { batchSize: 100 });
  try {
    await waitFor(() => r.events().length === 5);
    assertExactlyOnceInOrder(r.events(), [0, 2, 4, 6, 8]);
    assert.deepEqual(log.opened[1], positionOf(3), 'after the last record seen, foreign or not');
  } finally {
    await r.stop();
  }
});

test('catch-up: ready() is awaited before each page, and nothing is read from the source meanwhile', async () => {
  const log = new FakeLog();
  log.append(10);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let calls = 0;
  const r = run(log, null, { batchSize: 2, ready: () => (++calls === 1 ? Promise.resolve() : gate) });
  try {
    await waitFor(() => r.pages.length === 1, 'the first page');
    // Asked before each page: once asked the second time, the reader waits on the gate.
    await waitFor(() => calls >= 2, 'the reader to ask ready() before its second page');
    assert.deepEqual(r.pages.map((p) => p.length), [2]);
    assert.ok(log.pulls <= 3, `read ahead at most one record past the page, read ${log.pulls}`);
    open();
    await waitFor(() => r.events().length === 10);
    assertExactlyOnceInOrder(r.events(), range(0, 10));
  } finally {
    await r.stop();
  }
});

test('catch-up: time spent waiting on a slow consumer does not count as silence of the source', async () => {
  const log = new FakeLog({ probe: true, latencyMs: 20 });
  log.append(6);
  let calls = 0;
  const r = run(log, null, { batchSize: 2, flushAfterMs: 100, silenceMs: 50, ready: () => (++calls === 1 ? Promise.resolve() : sleep(120)) });
  try {
    await waitFor(() => r.events().length === 6);
    assertExactlyOnceInOrder(r.events(), range(0, 6));
    assert.deepEqual(r.resubscriptions, []);
  } finally {
    await r.stop();
  }
});

test('catch-up: backoff doubles while resubscriptions make no progress and starts over after progress', async () => {
  // Each subscription delivers nothing and fails: the delays grow to the cap.
  const log = new FakeLog({ faults: [...Array(6).fill({ after: 0, kind: 'throw' }), { after: 2, kind: 'throw' }, { after: 0, kind: 'throw' }] });
  log.append(4);
  const delays: number[] = [];
  const r = run(log, null, { backoffMs: 10, maxBackoffMs: 80, sleep: async (ms) => void delays.push(ms) });
  try {
    await waitFor(() => r.events().length === 4);
    assert.deepEqual(delays.slice(0, 8), [10, 20, 40, 80, 80, 80, 10, 20]);
    assertExactlyOnceInOrder(r.events(), range(0, 4));
  } finally {
    await r.stop();
  }
});

test('catch-up: a non-transient failure ends the reader; so does a failing ready(), without resubscribing', async () => {
  const log = new FakeLog({ faults: [{ after: 2, kind: 'fatal' }] });
  log.append(5);
  const r = run(log, null, { batchSize: 100 });
  await assert.rejects(r.done, /fatal/);
  assertExactlyOnceInOrder(r.events(), [0, 1]);
  assert.equal(log.open$, 1);

  const other = new FakeLog();
  other.append(5);
  let readyCalls = 0;
  const s = run(other, null, {
    batchSize: 2,
    ready: async () => {
      if (++readyCalls > 1) throw new Error('consumer broke');
    },
  });
  await assert.rejects(s.done, /consumer broke/);
  assert.equal(other.open$, 1);
  assert.deepEqual(s.resubscriptions, []);
});

test('catch-up: abort stops reading and closes the subscription, even while waiting on a silent one', async () => {
  const log = new FakeLog({ faults: [{ after: 1, kind: 'silent' }] });
  log.append(3);
  // An hour's silence: a stop that waited it out would run into the deadline below.
  const r = run(log, null, { silenceMs: 3_600_000 });
  await waitFor(() => r.events().length === 1);
  await within('stop() while the subscription is silent', r.stop(), 30_000);
  log.append(5);
  // Not a synchronization: that nothing more arrives after stop() has no event to wait for.
  await sleep(30);
  assert.equal(r.events().length, 1);
});

// ---------------------------------------------------------------------------

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean, what = 'the condition', timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}
