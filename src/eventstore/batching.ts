// Group commit for single-stream appends, and grouped reads of single streams, for a
// process that handles many commands at once (the API).
//
// Appends. With PostgreSQL every appending transaction NOTIFYs its readers, and PostgreSQL
// serializes the commits of NOTIFYing transactions (one global lock, held through the
// commit's WAL flush): concurrent appends, one transaction each, queue behind that lock.
// Here appends that arrive while a batch is being written wait and go together in the next
// one, through the port's appendMany: one statement, one commit, one notification for all
// of them. Each append keeps its own meaning: appendMany is atomic per stream and checks each
// stream's expected revision on its own, so a conflict fails that append only, as it would
// have alone. A stream appears at most once per batch (a second append to it waits for the
// next batch, where it sees the first). An append no store could take (no events, an invalid
// expected revision) is refused before it joins a batch, which it would fail as a whole. When
// the store refuses a batch for one append's data (a text PostgreSQL cannot hold, data that
// is not JSON), the batch is split down to that append (appendManyIsolating), so only the one
// at fault fails. An outage before anything was written (appendMany rejects) fails the batch's appends,
// as it would have each alone; a failure of one stream's append while others were written
// (EventStoreDB writes the streams of a batch one by one: the port reports it `failed`) fails
// that append only, and the appends written resolve as written: told otherwise, their callers
// would retry, and act twice or meet a conflict.
//
// Reads. Every command reads its stream first: reads that arrive while a read is under way
// go together in the next one (the adapter's readStreams), one round trip for all. A read
// still returns the stream as it stood at some moment between its call and its answer.
//
// Alone, an append or a read goes at once, so nothing waits when there is no queue.
import type { Observable } from 'rxjs';
import { appendManyIsolating, isRefused } from './isolate.ts';
import { appendError, checkAppend, type AppendResult, type BatchAppendResult, type EventData, type EventStore, type ExpectedRevision, type Position, type RecordedEvent, type StreamAppend, type SubscribeOptions } from './port.ts';

interface Waiting<Input, Output> {
  input: Input;
  resolve(output: Output): void;
  reject(error: unknown): void;
}

/**
 * Runs `write` on what is queued, one batch at a time; items keyed alike (when `keyOf` is
 * given) go in different batches. While a batch is under way, new items queue for the next.
 */
class Batcher<Input, Output> {
  private queue: Waiting<Input, Output>[] = [];
  /** Set and cleared inside drain() itself, so that no item can slip in unseen as it ends. */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();

  constructor(
    private readonly maxBatch: number,
    private readonly keyOf: ((input: Input) => string) | null,
    private readonly write: (batch: Waiting<Input, Output>[]) => Promise<void>,
  ) {}

  push(input: Input): Promise<Output> {
    return new Promise<Output>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.draining) this.drained = this.drain();
    });
  }

  async idle(): Promise<void> {
    while (this.draining) await this.drained;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.nextBatch();
        try {
          await this.write(batch);
        } catch (error) {
          for (const item of batch) item.reject(error);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** The oldest items, one per key, up to maxBatch; the rest stay queued in order. */
  private nextBatch(): Waiting<Input, Output>[] {
    const batch: Waiting<Input, Output>[] = [];
    const keys = new Set<string>();
    const later: Waiting<Input, Output>[] = [];
    for (const item of this.queue) {
      const key = this.keyOf?.(item.input);
      if (batch.length < this.maxBatch && (key === undefined || !keys.has(key))) {
        if (key !== undefined) keys.add(key);
        batch.push(item);
      } else later.push(item);
    }
    this.queue = later;
    return batch;
  }
}

export interface BatchingOptions {
  /** Most appends, or streams read, in one batch (default 500). */
  maxBatch?: number;
}

export class BatchingEventStore implements EventStore {
  private readonly appends: Batcher<StreamAppend, AppendResult>;
  private readonly reads: Batcher<string, RecordedEvent[]> | null;

  constructor(
    private readonly inner: EventStore,
    options: BatchingOptions = {},
  ) {
    const maxBatch = options.maxBatch ?? 500;
    this.appends = new Batcher(maxBatch, (append) => append.streamId, (batch) => this.writeAppends(batch));
    const readStreams = inner.readStreams?.bind(inner);
    this.reads = readStreams
      ? new Batcher(maxBatch, null, async (batch) => {
          const streams = await readStreams([...new Set(batch.map((item) => item.input))]);
          for (const item of batch) item.resolve([...(streams.get(item.input) ?? [])]);
        })
      : null;
  }

  append(streamId: string, events: readonly EventData[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const append = { streamId, events, expectedRevision };
    try {
      checkAppend(append);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.appends.push(append);
  }

  appendMany(appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
    return this.inner.appendMany(appends);
  }

  readStream(streamId: string): Promise<RecordedEvent[]> {
    return this.reads ? this.reads.push(streamId) : this.inner.readStream(streamId);
  }

  readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    if (this.inner.readStreams) return this.inner.readStreams(streamIds);
    return Promise.all(streamIds.map(async (id) => [id, await this.inner.readStream(id)] as const)).then((pairs) => new Map(pairs));
  }

  subscribeAll(from: Position | null, options?: SubscribeOptions): Observable<RecordedEvent[]> {
    return this.inner.subscribeAll(from, options);
  }

  readAll(from: Position | null, maxCount: number): Promise<RecordedEvent[]> {
    return this.inner.readAll(from, maxCount);
  }

  countEventsAfter(from: Position | null, cap: number): Promise<number> {
    return this.inner.countEventsAfter(from, cap);
  }

  headPosition(): Promise<Position | null> {
    return this.inner.headPosition();
  }

  countEvents(): Promise<number> {
    return this.inner.countEvents();
  }

  /** Waits for the appends and reads already asked for, then closes the store underneath. */
  async close(): Promise<void> {
    await Promise.all([this.appends.idle(), this.reads?.idle()]);
    await this.inner.close();
  }

  private async writeAppends(batch: Waiting<StreamAppend, AppendResult>[]): Promise<void> {
    const outcomes = await appendManyIsolating(this.inner, batch.map((item) => item.input));
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) batch[i]!.resolve(outcome.result);
      else batch[i]!.reject(isRefused(outcome) ? outcome.refused : appendError(outcome));
    });
  }
}
