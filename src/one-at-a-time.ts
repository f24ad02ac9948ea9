/**
 * A queue per key, within this process: the function it returns runs `work` for `key` after every
 * run queued before it for the same key has ended (failed or not). A key's entry is removed once
 * its last run has ended, so keys do not pile up.
 */
export function oneAtATime(): <T>(key: string, work: () => Promise<T>) => Promise<T> {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const mine = (tails.get(key) ?? Promise.resolve()).catch(() => undefined).then(work);
    tails.set(key, mine);
    try {
      return await mine;
    } finally {
      if (tails.get(key) === mine) tails.delete(key);
    }
  };
}
