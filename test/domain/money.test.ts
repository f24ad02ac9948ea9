import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MICROS_PER_USD, SNAPSHOT_PRICE, SNAPSHOTS_PER_DAY, estimatedCost, parseUsd, toUsd } from '../../src/domain/money.ts';

describe('money constants', () => {
  it('prices a snapshot at 0.015 USD = 15 000 micros', () => {
    assert.equal(SNAPSHOT_PRICE, 15_000);
    assert.equal(MICROS_PER_USD, 1_000_000);
    assert.equal(SNAPSHOTS_PER_DAY, 24);
    assert.equal(toUsd(SNAPSHOT_PRICE), 0.015);
  });
});

describe('estimatedCost', () => {
  // duration_days x 24 x 0.015 USD, in integer micros: 360 000 micros a day.
  for (let days = 1; days <= 30; days++) {
    it(`${days} day(s) = ${days * 360_000} micros`, () => {
      const cost = estimatedCost(days);
      assert.equal(cost, days * 360_000);
      assert.ok(Number.isSafeInteger(cost));
      // The USD figure is the double nearest the exact decimal (what JSON should show).
      assert.equal(toUsd(cost), Number(`${days * 360}e-3`));
      assert.equal(String(toUsd(cost)), (days * 0.36).toFixed(2).replace(/0+$/, '').replace(/\.$/, ''));
    });
  }

  it('30 days = 10 800 000 micros, shown as 10.8 (not 10.799999999999999)', () => {
    assert.equal(estimatedCost(30), 10_800_000);
    assert.equal(toUsd(estimatedCost(30)), 10.8);
    assert.equal(JSON.stringify({ estimated_cost: toUsd(estimatedCost(30)) }), '{"estimated_cost":10.8}');
    assert.notEqual(720 * 0.015, 10.8); // why money is integer micros inside
  });

  it('1 day = 360 000 micros, shown as 0.36', () => {
    assert.equal(estimatedCost(1), 360_000);
    assert.equal(toUsd(estimatedCost(1)), 0.36);
  });

  it('7 days = 2.52 USD', () => {
    assert.equal(toUsd(estimatedCost(7)), 2.52);
  });
});

describe('toUsd', () => {
  const cases: [micros: number, usd: number][] = [
    [0, 0],
    [1, 0.000001],
    [15_000, 0.015],
    [45_000, 0.045],
    [100_000_000, 100],
    [-15_000, -0.015],
  ];
  for (const [micros, usd] of cases) {
    it(`${micros} micros -> ${usd}`, () => assert.equal(toUsd(micros), usd));
  }
});

describe('parseUsd', () => {
  const valid: [text: string, micros: number][] = [
    ['0', 0],
    ['1', 1_000_000],
    ['10', 10_000_000],
    ['10.8', 10_800_000],
    ['10.80', 10_800_000],
    ['0.015', 15_000],
    ['0.000001', 1],
    ['12.345678', 12_345_678],
    ['007.5', 7_500_000],
    ['0000000000025', 25_000_000],
    ['0000000000000.5', 500_000],
    ['  25.5 ', 25_500_000],
    ['999999999', 999_999_999_000_000],
    ['9007199254.740991', Number.MAX_SAFE_INTEGER],
  ];
  for (const [text, micros] of valid) {
    it(`${JSON.stringify(text)} -> ${micros} micros`, () => assert.equal(parseUsd(text), micros));
  }

  it('does not go through floats: 0.1 + 0.2 style amounts are exact', () => {
    assert.equal(parseUsd('0.3'), 300_000);
    assert.equal(parseUsd('1.005'), 1_005_000);
    assert.equal(parseUsd('4.35'), 4_350_000); // 4.35 * 1e6 is 4349999.999999999 in floats
  });

  const invalid: [text: string, why: string][] = [
    ['', 'empty'],
    ['   ', 'blank'],
    ['abc', 'not a number'],
    ['-1', 'negative'],
    ['+1', 'explicit sign'],
    ['1.', 'trailing dot'],
    ['.5', 'no whole part'],
    ['1.0000001', 'more than 6 decimals'],
    ['1e3', 'exponent'],
    ['1,000', 'thousands separator'],
    ['1,5', 'decimal comma'],
    ['$10', 'currency sign'],
    ['10 USD', 'unit'],
    ['1 000', 'inner space'],
    ['0x10', 'hex'],
    ['Infinity', 'Infinity'],
    ['NaN', 'NaN'],
    ['1234567890123', '13 whole digits'],
    ['01234567890123', '13 whole digits after a leading zero'],
    ['9007199254.740992', 'one micro past 2^53 - 1'],
    ['999999999999.999999', 'beyond exact integers in a double'],
  ];
  for (const [text, why] of invalid) {
    it(`${why}: ${JSON.stringify(text)} -> null`, () => assert.equal(parseUsd(text), null));
  }
});
