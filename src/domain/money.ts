// Money is integer micro-USD inside the service (DESIGN §5): 0.015 USD = 15_000.
// Floats appear only at the JSON edge, as micros / 1e6, which is the double
// nearest the exact decimal (10_800_000 / 1e6 prints as 10.8).

export type Micros = number;

export const MICROS_PER_USD = 1_000_000;
export const SNAPSHOT_PRICE: Micros = 15_000;
export const SNAPSHOTS_PER_DAY = 24;

/**
 * The most an organization's balance may hold: 1,000,000,000 USD. Below 2^53 micros, where sums
 * round silently, and with at most 15 digits, which a JSON number shows exactly.
 */
export const MAX_BALANCE: Micros = 1_000_000_000 * MICROS_PER_USD;

export function estimatedCost(durationDays: number): Micros {
  return durationDays * SNAPSHOTS_PER_DAY * SNAPSHOT_PRICE;
}

export function toUsd(micros: Micros): number {
  return micros / MICROS_PER_USD;
}

/** Leading zeros are not significant: at most 12 whole digits after them. */
const USD_AMOUNT = /^0*(\d{1,12})(?:\.(\d{1,6}))?$/;

/** Parses a decimal USD string ("12.34") into micros without float arithmetic. */
export function parseUsd(text: string): Micros | null {
  const match = USD_AMOUNT.exec(text.trim());
  if (!match) return null;
  const whole = Number(match[1]);
  const fraction = Number((match[2] ?? '').padEnd(6, '0'));
  const micros = whole * MICROS_PER_USD + fraction;
  // Twelve whole digits can exceed 2^53 micros (~9.007e9 USD), where doubles round silently.
  return Number.isSafeInteger(micros) ? micros : null;
}
