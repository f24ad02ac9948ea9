// A catch-up reader that survives its subscription: pages, backpressure, resubscription.
//
// EventStoreDB's catch-up subscription (subscribeToAll) is a stream of events that is
// supposed to run forever, but it can end, fail, or, on a half-open connection, simply go
// quiet without an error, and the client does not resubscribe by itself. So the reader
// here owns the position: it remembers the last position it handed over (or stepped past),
// and whenever the subscription fails, ends or stays silent too long, it closes it and
// opens a new one after that position, with backoff. Whatever a new subscription replays
// at or before that position is dropped, so nothing is delivered twice, and since it
// starts right after the last position handed over, nothing is skipped.
//
// Silence alone is not proof of a dead connection: a caught-up subscription on an idle log
// is silent too. When the source can tell (`hasEventsAfter`), silence only counts when the
// log holds events the subscription has not delivered; otherwise the watch starts again.
//
// Backpressure: events are pulled one at a time (`for await`-style) from the source, whose
// own buffer is bounded, and `ready()` is awaited before each page is gathered, so a slow
// consumer stops the reading (and, through the client's stream, the server) instead of
// letting pages pile up.
//
// Pages: a page is emitted when it holds `batchSize` events, or when the source has
// nothing more for `flushAfterMs` (so a live event is not held back waiting for company).
//
// The source is an interface so that this logic is tested with fakes (test/eventstore/
// catch-up.test.ts); the EventStoreDB adapter supplies the real one.
import { comparePositions, type Position, type RecordedEvent } from './port.ts';

/** One record from the source: an event to deliver, or (event undefined) one to step over. */
export interface CatchUpItem {
  readonly position: Position;
  readonly event?: RecordedEvent;
}

export interface CatchUpStream extends AsyncIterable<CatchUpItem> {
  /** Stops the subscription; a pending read may then end or fail (either is ignored). */
  close(): Promise<void> | void;
}

export interface CatchUpSource {
  /**
   * Opens a subscription to every record after `after` (exclusive; null = from the start)
   * in global order. `alive` is to be called on every sign of life that is not a record
   * (subscription confirmed, checkpoint, caught up, fell behind).
   */
  open(after: Position | null, alive: () => void): CatchUpStream;
  /** Whether the log holds a record to deliver after `after`; used to tell idleness from a dead subscription. */
  hasEventsAfter?(after: Position | null): Promise<boolean>;
  /** Errors worth a new subscription (the rest end the reader). Default: all. */
  isTransient?(error: unknown): boolean;
}

export type ResubscribeReason = 'error' | 'ended' | 'silence';

export interface CatchUpOptions {
  readonly batchSize: number;
  readonly ready?: () => Promise<void>;
  /** A partial page is emitted once the source has been quiet this long (default 5 ms). */
  readonly flushAfterMs?: number;
  /** No record and no sign of life for this long counts as a dropped subscription (default 30 s). */
  readonly silenceMs?: number;
  /** First wait before resubscribing, doubled per failure without progress (default 100 ms). */
  readonly backoffMs?: number;
  /** Longest wait before resubscribing (default 5 s). */
  readonly maxBackoffMs?: number;
  /** Told of every resubscription (for logs and tests). */
  readonly onResubscribe?: (info: { after: Position | null; reason: ResubscribeReason; error?: unknown; delayMs: number }) => void;
  /** Injected in tests. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const TIMEOUT = Symbol('timeout');
const ABORTED = Symbol('aborted');

/**
 * Reads `source` after `from` until `signal` aborts, handing each page to `emit`.
 * Resolves when aborted; rejects on a non-transient source error, or when `ready` rejects.
 */
export async function followCatchUp(
  source: CatchUpSource,
  from: Position | null,
  options: CatchUpOptions,
  emit: (page: RecordedEvent[]) => void,
  signal: AbortSignal,
): Promise<void> {
  const batchSize = Math.max(1, options.batchSize);
  const flushAfterMs = options.flushAfterMs ?? 5;
  const silenceMs = options.silenceMs ?? 30_000;
  const backoffMs = options.backoffMs ?? 100;
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  const sleep = options.sleep ?? abortableSleep;
  const isTransient = source.isTransient ?? (() => true);

  const hand = (page: RecordedEvent[]) => {
    try {
      emit(page);
    } catch (error) {
      throw new ConsumerFailure(error);
    }
  };

  /** The last position handed over or stepped past: a new subscription starts after it. */
  let after = from;
  let failures = 0;

  while (!signal.aborted) {
    let lastSignOfLife = Date.now();
    const alive = () => (lastSignOfLife = Date.now());
    const startedAt = after;
    let stream: CatchUpStream | undefined;
    let iterator: AsyncIterator<CatchUpItem> | undefined;
    let pending: Promise<IteratorResult<CatchUpItem>> | undefined;
    let reason: ResubscribeReason;
    let failure: unknown;

    try {
      stream = source.open(after, alive);
      iterator = stream[Symbol.asyncIterator]();
      const it = iterator;
      const pull = () => {
        if (!pending) {
          pending = it.next();
          pending.catch(() => undefined); // it may be abandoned; its failure is seen when awaited
        }
        return pending;
      };

      reason = await (async (): Promise<ResubscribeReason> => {
        for (;;) {
          if (options.ready) {
            const ready = await race(options.ready(), signal).catch((error: unknown) => {
              throw new ConsumerFailure(error);
            });
            if (ready === ABORTED) return 'ended';
            // Time spent waiting on the consumer is not silence of the source (it was held back).
            alive();
          }
          if (signal.aborted) return 'ended';

          const page: RecordedEvent[] = [];
          let pageEnd = after;
          let outcome: ResubscribeReason | undefined;
          try {
            gather: while (page.length < batchSize) {
              const waitMs = page.length === 0 ? Math.max(0, lastSignOfLife + silenceMs - Date.now()) : flushAfterMs;
              const next = await race(pull(), signal, waitMs);
              if (next === ABORTED) return 'ended';
              if (next === TIMEOUT) {
                if (page.length > 0) break gather; // quiet: emit what we have
                if (Date.now() - lastSignOfLife < silenceMs) continue; // a sign of life came meanwhile
                if (source.hasEventsAfter) {
                  let behind: boolean;
                  try {
                    behind = await source.hasEventsAfter(pageEnd);
                  } catch {
                    behind = true; // cannot tell: assume the worst, a new subscription is cheap
                  }
                  if (signal.aborted) return 'ended';
                  if (!behind) {
                    alive(); // idle, not dead: watch again
                    continue;
                  }
                }
                outcome = 'silence';
                break gather;
              }
              pending = undefined;
              if (next.done) {
                outcome = 'ended';
                break gather;
              }
              alive();
              const item = next.value;
              // Replayed at or before where we are: already delivered (or stepped over).
              if (pageEnd && comparePositions(item.position, pageEnd) <= 0) continue;
              pageEnd = item.position;
              if (item.event) page.push(item.event);
            }
          } catch (error) {
            // Events gathered before the failure are good: hand them over, then resubscribe.
            if (page.length > 0 && !signal.aborted) hand(page);
            after = pageEnd;
            throw error;
          }
          if (signal.aborted) return 'ended';
          if (page.length > 0) hand(page);
          after = pageEnd;
          if (outcome) return outcome;
        }
      })();
    } catch (error) {
      if (signal.aborted) {
        await closeQuietly(stream, iterator);
        break;
      }
      if (error instanceof ConsumerFailure) {
        await closeQuietly(stream, iterator);
        throw error.cause;
      }
      if (!isTransient(error)) {
        await closeQuietly(stream, iterator);
        throw error;
      }
      reason = 'error';
      failure = error;
    }
    await closeQuietly(stream, iterator);
    if (signal.aborted) break;

    // Progress since the last (re)subscription resets the backoff.
    const progressed = (after === null) !== (startedAt === null) || (after !== null && startedAt !== null && comparePositions(after, startedAt) > 0);
    failures = progressed ? 1 : failures + 1;
    const delayMs = Math.min(maxBackoffMs, backoffMs * 2 ** (failures - 1));
    options.onResubscribe?.({ after, reason, error: failure, delayMs });
    await sleep(delayMs, signal).catch(() => undefined);
  }
}

/** A failure of the consumer (ready() or emit), not of the source: never a reason to resubscribe. */
class ConsumerFailure extends Error {
  constructor(readonly cause: unknown) {
    super('consumer failed');
  }
}

async function closeQuietly(stream: CatchUpStream | undefined, iterator: AsyncIterator<CatchUpItem> | undefined): Promise<void> {
  try {
    await stream?.close();
  } catch {
    // already gone
  }
  // Ends a generator-based source; not awaited, since a generator suspended in a read
  // that close() did not end would keep return() waiting forever.
  iterator?.return?.().catch(() => undefined);
}

/** The promise's value, ABORTED when the signal fires first, TIMEOUT after `ms` (when given). */
function race<T>(promise: Promise<T>, signal: AbortSignal, ms?: number): Promise<T | typeof TIMEOUT | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const timer = ms === undefined ? undefined : setTimeout(() => done(() => resolve(TIMEOUT)), ms);
    const onAbort = () => done(() => resolve(ABORTED));
    signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    function done(settle: () => void): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      settle();
    }
    promise.then(
      (value) => done(() => resolve(value)),
      (error: unknown) => done(() => reject(error)),
    );
  });
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(finish, ms);
    signal.addEventListener('abort', finish, { once: true });
    function finish(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
  });
}
