// The stretch of the log a process's subscriptions share (src/eventstore/log-tail.ts): what it
// may answer from memory, and what it must leave to the database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LogTail } from '../../src/eventstore/log-tail.ts';
import type { Position, RecordedEvent } from '../../src/eventstore/port.ts';

const at = (n: number): Position => ({ commit: 1000n, prepare: BigInt(n) });
const event = (n: number): RecordedEvent => ({ id: `e${n}`, streamId: `s${n}`, revision: 0n, type: 'E', data: {}, metadata: {}, position: at(n), recordedAt: new Date(0) });
const events = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => event(from + i));
const ids = (served: { page: readonly RecordedEvent[] } | null) => served?.page.map((e) => e.id) ?? null;

test('log tail: full pages come from memory; a short one is up to date only when read after the reader last woke', () => {
  const tail = new LogTail();
  assert.equal(tail.serve(at(0), 3, 0), null, 'nothing read yet');
  tail.remember(at(0), 3, events(1, 3), 10); // a full page: there may be more beyond e3
  assert.deepEqual(tail.serve(at(0), 3, 0), { page: events(1, 3), upToDate: true });
  assert.deepEqual(tail.serve(at(1), 2, 0), { page: events(2, 3), upToDate: true }, 'a full page of a smaller size');
  assert.deepEqual(tail.serve(at(1), 3, 0), { page: events(2, 3), upToDate: false }, 'e2, e3, but that read did not show the head: the reader reads on from e3');
  assert.equal(tail.serve(at(3), 3, 0), null, 'at the end of what was read: the database');

  tail.remember(at(3), 3, events(4, 4), 20); // short: the head at 20
  assert.deepEqual(tail.serve(at(2), 3, 15), { page: events(3, 4), upToDate: true }, 'the reader woke before that read: nothing it was told of is missing');
  assert.deepEqual(tail.serve(at(2), 3, 25), { page: events(3, 4), upToDate: false }, 'the reader woke after it: what woke it may be beyond e4');
  assert.deepEqual(tail.serve(at(4), 3, 15), { page: [], upToDate: true }, 'at the head, read since the reader woke: nothing to read');
  assert.equal(tail.serve(at(4), 3, 25), null, 'at the head, read before the reader woke: the database');
  assert.equal(tail.serve(at(-1), 3, 0), null, 'before the stretch');

  tail.remember(at(4), 3, [], 30); // nothing beyond e4 at 30
  assert.deepEqual(tail.serve(at(2), 3, 25), { page: events(3, 4), upToDate: true });
  assert.deepEqual(tail.serve(at(4), 3, 25), { page: [], upToDate: true });
});

test('log tail: an overlapping read extends the stretch, an older shorter one changes nothing, a distant one starts anew', () => {
  const tail = new LogTail();
  tail.remember(at(0), 10, events(1, 5), 10);
  tail.remember(at(3), 10, events(4, 8), 20);
  assert.deepEqual(ids(tail.serve(at(0), 10, 15)), ['e1', 'e2', 'e3', 'e4', 'e5', 'e6', 'e7', 'e8']);
  tail.remember(at(1), 10, events(2, 6), 30); // sent before the last, answered after it
  assert.deepEqual(ids(tail.serve(at(5), 10, 15)), ['e6', 'e7', 'e8'], 'still up to e8');
  tail.remember(at(100), 10, events(101, 102), 40);
  assert.equal(tail.serve(at(2), 10, 0), null, 'the old stretch is gone');
  assert.deepEqual(ids(tail.serve(at(100), 10, 35)), ['e101', 'e102']);
});

test('log tail: past twice what it keeps (here 20,000) it keeps the newest 20,000', () => {
  const tail = new LogTail(20_000);
  tail.remember(at(0), 50_000, events(1, 30_000), 10);
  assert.deepEqual(ids(tail.serve(at(0), 2, 0)), ['e1', 'e2'], 'not yet trimmed');
  tail.remember(at(30_000), 50_000, events(30_001, 45_000), 20);
  assert.equal(tail.serve(at(24_999), 10, 0), null, 'dropped');
  assert.deepEqual(ids(tail.serve(at(25_000), 2, 0)), ['e25001', 'e25002']);
  assert.equal(tail.serve(at(44_990), 100, 15)?.page.length, 10);
});
