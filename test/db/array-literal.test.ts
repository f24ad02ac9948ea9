// Array literals written by hand must reach the server as the same arrays pg sends for the
// JavaScript arrays themselves, for every kind of element the set-based statements pass.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { arrayLiteral } from '../../src/db/array-literal.ts';
import { createTestDatabase } from '../support/db.ts';

const CASES: Array<{ type: string; values: (string | number | boolean | null)[] }> = [
  { type: 'text', values: ['video-1', 'a "quoted" word', 'back\\slash', '\\"', '', 'NULL', 'null', 'a,b', '{braces}', ' padded ', 'line\nbreak', 'é 🎬', null] },
  { type: 'text', values: ['plain', 'only', 'ids'] },
  { type: 'text', values: ['no null, but "quotes"', 'and a back\\slash'] },
  { type: 'text', values: [] },
  { type: 'int', values: [1, 0, -7, 2147483647] },
  { type: 'int', values: [3, null] },
  { type: 'bigint', values: ['9223372036854775807', '0', null] },
  { type: 'boolean', values: [true, false, null] },
  { type: 'timestamptz', values: ['2026-01-01T00:00:00.000Z', '2026-11-26T15:04:05.123Z'] },
];

test('a hand-written array literal is read by the server as the array pg sends', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  for (const { type, values } of CASES) {
    const sql = `SELECT $1::${type}[]::text AS literal, $2::${type}[]::text AS given`;
    const { rows } = await db.pool.query<{ literal: string; given: string }>(sql, [arrayLiteral(values), values]);
    assert.equal(rows[0]!.literal, rows[0]!.given, `${type}[] of ${JSON.stringify(values)}`);
  }
});

test('without a quote or a backslash, the literal is one join; with one, each element is escaped', () => {
  assert.equal(arrayLiteral(['a', 'b']), '{"a","b"}');
  assert.equal(arrayLiteral([1, true]), '{"1","true"}');
  assert.equal(arrayLiteral(['say "hi"', 'c:\\']), '{"say \\"hi\\"","c:\\\\"}');
  assert.equal(arrayLiteral(['x', null]), '{"x",NULL}');
});
