// How figures read on the pages. Money arrives as integer micro-USD and is formatted with
// integer arithmetic only (DESIGN §5).
import type { Micros } from '../../domain/money.ts';

/** $12.50, $0.015, -$3.00: at least two decimals, more only where the micros need them. */
export function usd(micros: Micros): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / 1_000_000);
  let fraction = String(abs % 1_000_000).padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${sign}$${whole.toLocaleString('en-US')}.${fraction}`;
}

/** A metric (a decimal string that may exceed 2^53) with thousands separators. */
export function count(value: string | number | bigint | null | undefined): string {
  if (value === null || value === undefined) return '–';
  const text = String(value);
  return /^\d+$/.test(text) ? text.replace(/\B(?=(\d{3})+(?!\d))/g, ',') : text;
}

/** 2026-11-24 15:04 UTC: one zone for everyone, as the API's timestamps are. */
export function when(date: Date | string | null | undefined): string {
  if (!date) return 'never';
  const iso = (typeof date === 'string' ? new Date(date) : date).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

export function days(value: number): string {
  return value.toFixed(value >= 10 || Number.isInteger(value) ? 0 : 1);
}
