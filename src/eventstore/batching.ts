// Group commit for single-stream appends. With PostgreSQL every appending transaction
// NOTIFYs its readers, and PostgreSQL serializes the commits of NOTIFYing transactions
// (one global lock held through the commit's WAL flush): concurrent appends, one
// transaction each, queue behind that lock. Here appends that arrive while a batch is
// being written wait and go together in the next one, through the port's appendMany: one
// statement, one commit, one notification for all of them. Alone, an append is written at
// once, so nothing waits when there is no queue.
//
// Each append keeps its own meaning: appendMany is atomic per stream and checks each
// stream's expected revision on its own, so a conflict fails that append only, as it
// would have alone. A stream appears at most once per batch (a second append to it waits
// for the next batch, where it sees the first). When a batch fails as a whole (say one
// append's data cannot be stored), its appends are written one by one, so only the one at
// fault fails.
import type { AppendResult, BatchAppendResult, EventData, EventStore, ExpectedRevision, Position, RecordedEvent, StreamAppend, SubscribeOptions } from './port.ts';
import type { Observable } from 'rxjs';

interface Pending {
  append: StreamAppend;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

export interface BatchingOptions {
  /** Most appends in one batch (default 500). */
  maxBatch?: number;
}

export class BatchingEventStore implements EventStore {
  private queue: Pending[] = [];
  /** Set and cleared inside drain() itself, so that no append can slip in as it ends unseen. */
  private draining = false;
  private drained: Promise<void> = Promise.resolve();
  private readonly maxBatch: number;

  constructor(
    private readonly inner: EventStore,
    options: BatchingOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 500;
  }

  append(streamId: string, events: readonly EventData[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ append: { streamId, events, expectedRevision }, resolve, reject });
      if (!this.draining) this.drained = this.drain();
    });
  }

  appendMany(appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
    return this.inner.appendMany(appends);
  }

  readStream(streamId: string): Promise<RecordedEvent[]> {
    return this.inner.readStream(streamId);
  }

  subscribeAll(from: Position | null, options?: SubscribeOptions): Observable<RecordedEvent[]> {
    return this.inner.subscribeAll(from, options);
  }

  headPosition(): Promise<Position | null> {
    return this.inner.headPosition();
  }

  /** Waits for the appends already asked for, then closes the store underneath. */
  async close(): Promise<void> {
    while (this.draining) await this.drained;
    await this.inner.close();
  }

  /** Writes batches until the queue is empty; the flag drops in the same step as the last look at the queue. */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.nextBatch();
        try {
          const results = await this.inner.appendMany(batch.map((p) => p.append));
          results.forEach((outcome, i) => (outcome.ok ? batch[i]!.resolve(outcome.result) : batch[i]!.reject(outcome.conflict)));
        } catch (error) {
          if (batch.length === 1) batch[0]!.reject(error);
          else await Promise.all(batch.map((p) => this.inner.append(p.append.streamId, p.append.events, p.append.expectedRevision).then(p.resolve, p.reject)));
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** The oldest appends, one per stream, up to maxBatch; the rest stay queued in order. */
  private nextBatch(): Pending[] {
    const batch: Pending[] = [];
    const streams = new Set<string>();
    const later: Pending[] = [];
    for (const pending of this.queue) {
      if (batch.length < this.maxBatch && !streams.has(pending.append.streamId)) {
        streams.add(pending.append.streamId);
        batch.push(pending);
      } else later.push(pending);
    }
    this.queue = later;
    return batch;
  }
}
