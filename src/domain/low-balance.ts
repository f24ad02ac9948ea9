// balance.low: sent when an organization's available balance (balance minus uncharged usage)
// falls below its threshold, once per crossing; a deposit (or a new threshold) arms it again.
import { SNAPSHOT_PRICE, type Micros } from './money.ts';

/** The threshold in force: the one set, or the cost of the next 24 h of the active live videos. */
export function lowBalanceThreshold(set: Micros | null, activeLiveVideos: number): Micros {
  return set ?? activeLiveVideos * 24 * SNAPSHOT_PRICE;
}

export function fallsBelow(available: Micros, threshold: Micros, armed: boolean): boolean {
  return armed && available < threshold;
}
