// Nothing reads the time directly: everything takes a Clock, so that tests can
// set time and TIME_SCALE can make a day pass in 24 seconds.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that runs `scale` times faster than wall time, starting from the wall time now. */
export function scaledClock(scale: number, origin = Date.now()): Clock {
  if (scale === 1) return systemClock;
  return { now: () => new Date(origin + (Date.now() - origin) * scale) };
}

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(to: Date | string): void {
    this.current = new Date(to).getTime();
  }
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
