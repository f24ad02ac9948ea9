import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { count, id, Malformed, parseJsonLossless } from '../../src/collect/collectors/json.ts';

describe('parseJsonLossless', () => {
  it('keeps integers beyond 2^53 as exact decimal strings and leaves the rest to JSON.parse', () => {
    assert.deepEqual(parseJsonLossless('{"id":7170520270497680683,"n":54320,"f":1.5,"neg":-12,"big":-9007199254740993}'), {
      id: '7170520270497680683',
      n: 54320,
      f: 1.5,
      neg: -12,
      big: '-9007199254740993',
    });
    assert.equal(parseJsonLossless('9007199254740991'), 9007199254740991);
    assert.equal(parseJsonLossless('9007199254740992'), '9007199254740992');
  });

  it('never touches digits inside strings, escaped quotes included', () => {
    assert.deepEqual(parseJsonLossless('{"t":"id \\"7170520270497680683\\" 12345678901234567890"}'), {
      t: 'id "7170520270497680683" 12345678901234567890',
    });
  });

  it('throws on malformed text', () => {
    assert.throws(() => parseJsonLossless('{"id":'), SyntaxError);
  });

  // The rewrite's scan alone would match this again from each of its quotes: hours for 2 MB.
  it('throws on an unclosed string of a million escaped quotes without scanning it a million times', { timeout: 30_000 }, () => {
    assert.throws(() => parseJsonLossless('"' + '\\"'.repeat(1_000_000)), SyntaxError);
  });
});

describe('count and id', () => {
  it('read JSON numbers and digit strings as canonical decimal strings', () => {
    assert.equal(count(0, 'c'), '0');
    assert.equal(count('00042', 'c'), '42');
    assert.equal(count('9223372036854775807', 'c'), '9223372036854775807');
    assert.equal(count(undefined, 'c'), undefined);
    assert.equal(id(2244994945, 'i'), '2244994945');
  });

  it('refuse what is not a non-negative integer', () => {
    for (const bad of [-1, 1.5, '12a', '', true, {}]) assert.throws(() => count(bad, 'c'), Malformed);
  });

  it('refuse counts the read models cannot hold (above bigint, 2^63 - 1), however they are written', () => {
    for (const bad of ['9223372036854775808', '98765432109876543210', '1'.repeat(100_000), '-5', '1e3', 1e30, 2 ** 53, ' 12']) {
      assert.throws(() => count(bad, 'c'), Malformed, String(bad).slice(0, 30));
    }
    assert.throws(() => id(1.5, 'i'), Malformed);
  });
});
