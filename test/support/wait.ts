// Waiting in tests: every wait has a deadline, and a wait that runs out says what it waited
// for (and the last thing it saw), so a slow machine gives a clear failure instead of a hang.

export class WaitTimeout extends Error {}

/**
 * Calls `probe` until it returns something other than undefined; a probe that throws counts
 * as "not yet" (a server still starting), and its last error is quoted when time runs out.
 */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const seen = lastError === undefined ? '' : ` (last error: ${describe(lastError)})`;
      throw new WaitTimeout(`timed out after ${timeoutMs} ms waiting for ${what}${seen}`);
    }
    await delay(intervalMs);
  }
}

/** `promise`, or a WaitTimeout naming `what` once `ms` have passed. */
export async function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new WaitTimeout(`timed out after ${ms} ms waiting for ${what}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A pause that is not a synchronization: only for checking that nothing MORE happens (a
 * duplicate delivery, a second e-mail) after the awaited thing did. Callers say why.
 */
export function quietPeriod(ms: number): Promise<void> {
  return delay(ms);
}

/** An error's message with its causes ("fetch failed: connect ECONNREFUSED ..."). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause === undefined ? error.message : `${error.message}: ${describe(error.cause)}`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
