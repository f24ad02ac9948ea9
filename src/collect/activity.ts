// Whether this process is collecting right now. Collection comes first: a slot not collected in
// its hour is lost and late snapshots are what customers pay for, while a webhook delivery only
// waits. So the webhook dispatcher starts no new sends while a sweep runs here (those under way
// go on), for at most a few seconds at a time (its MAX_YIELD_MS), so that sweeps one after
// another cannot hold deliveries back for good.
export class CollectionActivity {
  private running = 0;
  private waiting: Array<() => void> = [];

  async during<T>(sweep: () => Promise<T>): Promise<T> {
    this.running++;
    try {
      return await sweep();
    } finally {
      if (--this.running === 0) {
        const waiting = this.waiting;
        this.waiting = [];
        for (const resume of waiting) resume();
      }
    }
  }

  /** Whether a sweep runs now. */
  get busy(): boolean {
    return this.running > 0;
  }

  /** Resolves at once when no sweep runs, else when the running ones have ended. */
  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
