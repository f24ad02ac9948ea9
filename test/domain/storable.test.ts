// What may enter the log (src/domain/storable.ts): counts up to bigint, text without NUL and
// lone surrogates, bounded in length; and the video decider keeps anything else out of its events.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainError } from '../../src/domain/errors.ts';
import { cleanMetadata, cleanText, countOf, hasUnstorableCharacters, MAX_COUNT, metricsProblem, TEXT_LIMITS, unstorableTextPath } from '../../src/domain/storable.ts';
import type { Metrics } from '../../src/domain/platform.ts';
import { decideVideo } from '../../src/domain/video-decide.ts';
import { metadataKey, type VideoState } from '../../src/domain/video.ts';

describe('countOf', () => {
  it('gives the canonical decimal string of a count up to 2^63 - 1', () => {
    assert.equal(countOf(0), '0');
    assert.equal(countOf(Number.MAX_SAFE_INTEGER), String(Number.MAX_SAFE_INTEGER));
    assert.equal(countOf('000123'), '123');
    assert.equal(countOf(MAX_COUNT.toString()), '9223372036854775807');
    assert.equal(countOf(`00${MAX_COUNT}`), '9223372036854775807');
    assert.equal(countOf('000'), '0');
    assert.equal(countOf('1000000000000000000'), '1000000000000000000', '19 digits below the largest');
    assert.equal(countOf('999999999999999999'), '999999999999999999', '18 digits');
  });

  it('refuses negative, fractional, unsafe, oversized and non-numeric values', () => {
    for (const bad of [-1, 1.5, NaN, Infinity, 2 ** 53, '9223372036854775808', '9999999999999999999', '009223372036854775808', '9'.repeat(40), '9'.repeat(1_000_000), '-1', '1.0', '1e5', '', ' 1', '１', null, true, {}, 10n]) {
      assert.equal(countOf(bad), null, typeof bad === 'string' ? bad.slice(0, 30) : String(bad));
    }
  });

  it('names the first metric that is not a count', () => {
    assert.equal(metricsProblem({ views: '1', likes: '2' }), null);
    assert.match(metricsProblem({ views: '1', likes: '9223372036854775808' })!, /^likes is not a count/);
    assert.match(metricsProblem({ views: '007' })!, /^views/, 'only canonical strings are counts in an event');
  });

  it('takes as a metric exactly what countOf gives back unchanged, or nothing (undefined, null)', () => {
    const values = ['0', '7', '10', '00', '01', '9223372036854775807', '9223372036854775808', '1000000000000000000', '9999999999999999999',
      '0009', '-0', '+1', '1 ', '１', '٣', 'abc', '', '9'.repeat(20), 0, 7, -1, 1.5, null, undefined, true, {}, 10n];
    for (const value of values) {
      const asMetric = metricsProblem({ views: value } as unknown as Metrics) === null;
      assert.equal(asMetric, value == null || countOf(value) === value, `${typeof value} ${String(value)}`);
    }
  });
});

describe('text', () => {
  it('finds NUL and lone surrogates, not surrogate pairs', () => {
    for (const bad of ['a\u0000', '\ud800', 'x\ud800y', '\udc00', 'x\udfffy', '\ud83d', 'end\udbff']) assert.ok(hasUnstorableCharacters(bad), JSON.stringify(bad));
    for (const good of ['', 'plain', '\ud83d\ude00', 'café \u2603', '\u0001 control is fine']) assert.ok(!hasUnstorableCharacters(good), JSON.stringify(good));
  });

  it('cleans by removing them and caps the length without splitting a pair', () => {
    assert.equal(cleanText('a\u0000b\ud800c\udc00d\ud83d\ude00', 100), 'abcd\ud83d\ude00');
    assert.equal(cleanText('ab\ud83d\ude00', 3), 'ab');
    assert.equal(cleanText('x'.repeat(50), 10), 'x'.repeat(10));
    const absurd = cleanMetadata({ title: 't\u0000'.repeat(1_000_000), creator: '\ud800', description: 'd'.repeat(10_000_000) });
    assert.equal(absurd.title.length, TEXT_LIMITS.title);
    assert.equal(absurd.creator, '');
    assert.equal(absurd.description.length, TEXT_LIMITS.description);
  });
});

describe('unstorableTextPath', () => {
  it('names the first value or key holding such text, at any depth', () => {
    assert.equal(unstorableTextPath({ a: 1, b: [null, 'ok', { c: 'x\u0000' }] }), 'b.2.c');
    assert.equal(unstorableTextPath({ ok: { ['k\ud800']: 1 } }), 'ok.k\ud800');
    assert.equal(unstorableTextPath('\udc00'), '');
    assert.equal(unstorableTextPath({ a: ['\ud83d\ude00', 2n, true], b: null }), null);
  });

  it('walks a value nested deeper than the call stack goes', () => {
    let deep: unknown = 'x\u0000';
    for (let depth = 0; depth < 200_000; depth++) deep = [deep];
    assert.equal(unstorableTextPath(deep), Array(200_000).fill('0').join('.'));
  });
});

describe('the video decider keeps unstorable values out of its events', () => {
  const now = new Date('2026-03-01T01:00:00Z');
  const state: VideoState = {
    exists: true, videoId: 'v', orgId: 'o', mode: 'live', platform: 'youtube', platformId: 'p', status: 'monitoring',
    startedAt: Date.parse('2026-03-01T00:00:00Z'), durationDays: 1, nextSlot: 1, snapshots: 1, consecutiveFailures: 0,
    isDeleted: false, metadataKey: metadataKey({ title: 't', creator: 'c', description: 'd' }),
  };
  const snapshot = { snapshotId: 's', provider: 'p', metrics: { views: '1' }, metadata: { title: 'new\u0000 title\ud800', creator: 'c', description: 'd' } };

  it('records a snapshot with its text cleaned', () => {
    const [event] = decideVideo({ type: 'RecordSnapshot', slot: 1, snapshot, now }, state);
    assert.deepEqual(event!.type === 'SnapshotRecorded' && event!.data.metadata, { title: 'new title', creator: 'c', description: 'd' });
  });

  it('refuses a snapshot whose count does not fit a bigint', () => {
    assert.throws(
      () => decideVideo({ type: 'RecordSnapshot', slot: 1, snapshot: { ...snapshot, metrics: { views: '99999999999999999999' } }, now }, state),
      (error: unknown) => error instanceof DomainError && error.code === 'invalid_argument' && /views/.test(error.message),
    );
  });

  it('cleans a failure message quoting the platform', () => {
    const [event] = decideVideo({ type: 'RecordCollectionFailure', slot: 1, reason: 'unreachable', message: 'HTTP 500: \u0000boom\udc00', now }, state);
    assert.equal(event!.type === 'CollectionFailed' && event!.data.message, 'HTTP 500: boom');
  });
});
