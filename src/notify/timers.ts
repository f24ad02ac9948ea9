// The two timers the notify senders and reactors share: a wake-up that a new one replaces, and
// a wait for work under way that gives up at a deadline (a stop's budget).

/** One pending wake-up at a time; it never keeps the process alive. */
export class WakeTimer {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly wake: () => void) {}

  /** Wakes in `ms`, replacing the wake-up set before. */
  in(ms: number): void {
    this.clear();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, ms);
    this.timer.unref();
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/**
 * Resolves when `promise` settles or `ms` have passed, whichever comes first (Infinity: no
 * deadline): with `promise`'s value, or with `late` once the time is up.
 */
export async function raceDeadline<T, L = undefined>(promise: Promise<T>, ms: number, late?: L): Promise<T | L> {
  if (!Number.isFinite(ms)) return await promise;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<L>((resolve) => (timer = setTimeout(() => resolve(late as L), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
