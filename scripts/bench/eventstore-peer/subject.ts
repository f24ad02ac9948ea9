// What the event-store benchmark drives: vidtrack's store and the peer (Emmett) behind the same
// four operations, so that both run the very same workloads (workloads.ts).
import { SAMPLE_EVENT_DATA } from '../limits.ts';

/** Every event the benchmark appends: a snapshot as the service records it (about 500 bytes of JSON). */
export const BENCH_EVENT = { type: 'SnapshotRecorded', data: SAMPLE_EVENT_DATA } as const;

export interface Subject {
  /** One event to a stream that does not exist yet (its own transaction, or the store's group commit). */
  appendOne(streamId: string): Promise<void>;
  /** One event to each of these new streams, through the store's multi-stream append where it has one. */
  appendBatch(streamIds: readonly string[]): Promise<void>;
  /** Reads the whole log in global order, pages of `pageSize`; returns how many distinct events it read. */
  readAll(pageSize: number): Promise<number>;
  /**
   * Projects the whole log into the projection table (projection.ts) through the store's own
   * catch-up mechanism, from the start until it has caught up (`total` events, or the store's
   * own idea of caught up); returns the events the table counts.
   */
  project(pageSize: number, total: number): Promise<number>;
  close(): Promise<void>;
}
