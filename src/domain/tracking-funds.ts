// The balance rule of a new tracking (spec §4.1 rule 2, DESIGN §8): the organization's
// available funds (balance minus uncharged usage) must cover the estimated cost. Test mode is
// never charged, so it is never short.
import { estimatedCost, type Micros } from './money.ts';
import type { KeyMode } from './platform.ts';

/** How much is missing to track for `durationDays` (0: nothing). */
export function trackingShortfall(mode: KeyMode, availableFunds: Micros, durationDays: number): Micros {
  if (mode === 'test') return 0;
  return Math.max(0, estimatedCost(durationDays) - availableFunds);
}
