import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/clock.ts';
import { Backoff, MAX_BLOCK_MS } from '../../src/collect/collectors/backoff.ts';

describe('Backoff', () => {
  const start = new Date('2026-07-01T12:00:00.000Z');
  const inMinutes = (minutes: number) => new Date(start.getTime() + minutes * 60_000);

  it('blocks until the time given, a later block winning over an earlier one', () => {
    const backoff = new Backoff(new ManualClock(start));
    assert.deepEqual(backoff.block(inMinutes(15), 'window used'), { status: 'unavailable', message: 'window used', retryAfter: inMinutes(15), ownLimit: true });
    backoff.block(inMinutes(5), 'earlier');
    assert.deepEqual(backoff.blocked(), { status: 'unavailable', message: 'window used', retryAfter: inMinutes(15), ownLimit: true });
  });

  it('blocks a day at most, however far the platform names', () => {
    const clock = new ManualClock(start);
    const backoff = new Backoff(clock);
    backoff.block(new Date('5138-11-16T09:46:39Z'), 'far');
    assert.deepEqual(backoff.blocked()?.retryAfter, new Date(start.getTime() + MAX_BLOCK_MS));
    clock.advance(MAX_BLOCK_MS);
    assert.equal(backoff.blocked(), undefined);
  });

  it('blocks a day for a time in milliseconds past what a Date can hold, Infinity included', () => {
    for (const until of [1e17, Number.POSITIVE_INFINITY]) {
      const backoff = new Backoff(new ManualClock(start));
      backoff.block(until, 'far');
      assert.deepEqual(backoff.blocked()?.retryAfter, new Date(start.getTime() + MAX_BLOCK_MS), `until ${until}`);
    }
  });

  it('takes a time that is no date for no block, and keeps the one it has', () => {
    const backoff = new Backoff(new ManualClock(start));
    assert.deepEqual(backoff.block(new Date(Number.NaN), 'unreadable'), { status: 'unavailable', message: 'unreadable', ownLimit: true });
    assert.equal(backoff.blocked(), undefined);
    backoff.block(inMinutes(15), 'window used');
    backoff.block(new Date(Number.NaN), 'unreadable');
    assert.deepEqual(backoff.blocked(), { status: 'unavailable', message: 'window used', retryAfter: inMinutes(15), ownLimit: true });
  });
});
