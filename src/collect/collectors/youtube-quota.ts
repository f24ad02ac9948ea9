// YouTube answers 403 quotaExceeded only once the day's units are gone, and every call (even a
// failed one) costs a unit. Counting here lets the collector stop before the wall instead of
// hitting it with every remaining batch. The count is per process: several schedulers sharing one
// API key each believe they have the whole quota, and the API's 403 remains the final word.
import type { Clock } from '../../clock.ts';

const PACIFIC = new Intl.DateTimeFormat('en-US', {
  timeZone: 'America/Los_Angeles',
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  hourCycle: 'h23',
});

export const YOUTUBE_DAILY_QUOTA_UNITS = 10_000;

export class YouTubeQuota {
  private day = '';
  private used = 0;

  constructor(
    private readonly clock: Clock,
    private readonly dailyUnits = YOUTUBE_DAILY_QUOTA_UNITS,
  ) {}

  /** Takes `units` from today's quota; false (and nothing taken) when they are not left. */
  trySpend(units: number): boolean {
    this.rollOver();
    if (this.used + units > this.dailyUnits) return false;
    this.used += units;
    return true;
  }

  /** The API said the quota is gone (another process, or a console change): believe it until reset. */
  exhaust(): void {
    this.rollOver();
    this.used = this.dailyUnits;
  }

  remaining(): number {
    this.rollOver();
    return this.dailyUnits - this.used;
  }

  /** When the quota comes back: the next midnight in Pacific time. */
  resetsAt(): Date {
    return nextPacificMidnight(this.clock.now());
  }

  private rollOver(): void {
    const today = pacificParts(this.clock.now()).date;
    if (today !== this.day) {
      this.day = today;
      this.used = 0;
    }
  }
}

export function nextPacificMidnight(at: Date): Date {
  const { year, month, day } = pacificParts(at);
  // Midnight Pacific is 08:00 UTC in standard time and 07:00 UTC in daylight time; clocks change
  // at 02:00, so midnight always exists and is one of the two.
  const standard = Date.UTC(year, month - 1, day + 1, 8);
  return new Date(pacificParts(new Date(standard)).hour === 1 ? standard - 3_600_000 : standard);
}

function pacificParts(at: Date): { year: number; month: number; day: number; hour: number; date: string } {
  const parts = Object.fromEntries(PACIFIC.formatToParts(at).map((part) => [part.type, part.value]));
  const [year, month, day, hour] = [parts.year, parts.month, parts.day, parts.hour].map(Number);
  return { year, month, day, hour, date: `${parts.year}-${parts.month}-${parts.day}` };
}
