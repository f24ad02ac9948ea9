import type { Observable } from 'rxjs';

/**
 * A place in the global order of the log. Both adapters order events by a pair:
 * PostgreSQL by (transaction id, sequence position), EventStoreDB by its
 * (commit, prepare) positions. Kept as bigints: never Number() them.
 */
export interface Position {
  readonly commit: bigint;
  readonly prepare: bigint;
}

export interface EventData<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
  readonly metadata?: Record<string, unknown>;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  readonly id: string;
  readonly streamId: string;
  /** 0-based index of the event within its stream. */
  readonly revision: bigint;
  readonly position: Position;
  readonly type: Type;
  readonly data: Data;
  readonly metadata: Record<string, unknown>;
  readonly recordedAt: Date;
}

/** Expected revision of a stream before an append. */
export type ExpectedRevision =
  | bigint // the stream's last event has exactly this revision
  | 'no_stream' // the stream must not exist
  | 'any';

export interface AppendResult {
  /** Revision of the last event written to the stream. */
  readonly nextExpectedRevision: bigint;
  /** Global position of the last event written. */
  readonly position: Position;
}

export interface StreamAppend {
  readonly streamId: string;
  readonly events: readonly EventData[];
  readonly expectedRevision: ExpectedRevision;
}

export type BatchAppendResult =
  | { readonly streamId: string; readonly ok: true; readonly result: AppendResult }
  | { readonly streamId: string; readonly ok: false; readonly conflict: WrongExpectedRevision }
  /**
   * The stream's append failed otherwise (an outage, after the adapter's own retries) in a
   * call that wrote other streams: `failed` is the error its append alone would have thrown,
   * and, as after a failed append, whether it landed is not known for sure.
   */
  | { readonly streamId: string; readonly ok: false; readonly failed: unknown };

/**
 * Throws what makes an append wrong whatever the store holds (no stream id, no events, an
 * invalid expected revision): it would fail any batch it joined, so it is refused before.
 */
export function checkAppend({ streamId, events, expectedRevision }: StreamAppend): void {
  if (typeof streamId !== 'string' || streamId === '') throw new TypeError('stream id must be a non-empty string');
  if (events.length === 0) throw new RangeError(`append to ${streamId} has no events`);
  if (typeof expectedRevision === 'bigint' ? expectedRevision < 0n : expectedRevision !== 'any' && expectedRevision !== 'no_stream') {
    throw new RangeError(`stream ${streamId}: invalid expected revision ${String(expectedRevision)}`);
  }
}

/** The error a stream's append alone would have thrown, for an outcome that is not ok. */
export function appendError(outcome: Extract<BatchAppendResult, { ok: false }>): unknown {
  return 'conflict' in outcome ? outcome.conflict : outcome.failed;
}

export interface SubscribeOptions {
  /** Most events read per page; a page is emitted as one array. */
  readonly batchSize?: number;
  /**
   * Backpressure: awaited before the next page is read, so a slow consumer
   * (a projection applying a batch) holds the reader back instead of letting
   * pages pile up in memory.
   */
  readonly ready?: () => Promise<void>;
  /**
   * For a reader that need not see events at once (the reactors): once caught up, it reads the
   * log at most once in this many milliseconds, however often appends wake it, so that under a
   * stream of small appends it reads fewer, larger pages. A page that comes full is followed at
   * once. Honoured by the PostgreSQL store, whose readers poll; EventStoreDB pushes its events.
   */
  readonly minReadIntervalMs?: number;
}

export interface EventStore {
  append(streamId: string, events: readonly EventData[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to many streams in one round trip. Atomic per stream: each stream's
   * events land together or not at all; a conflict on one stream does not stop
   * the others. One outcome per append, in input order. The call rejects only when
   * no stream was written (an outage, data the store refuses): once any stream is
   * written, its caller must hear so, and a stream whose append failed otherwise than
   * by a conflict is reported `failed` with its own error. (An adapter that writes the
   * batch all or nothing, PostgreSQL, never reports `failed`.)
   */
  appendMany(appends: readonly StreamAppend[]): Promise<BatchAppendResult[]>;
  /** All events of a stream in revision order; [] when the stream does not exist. */
  readStream(streamId: string): Promise<RecordedEvent[]>;
  /**
   * Several streams in one round trip (optional: an adapter without it is read stream by
   * stream). Each stream's events in revision order; a missing stream maps to [].
   */
  readStreams?(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>>;
  /**
   * Every event after `from` (exclusive; null = from the start) in global
   * order, as pages, and then live as they are committed. Never skips an
   * event, even one whose transaction commits after a later one.
   */
  subscribeAll(from: Position | null, options?: SubscribeOptions): Observable<RecordedEvent[]>;
  /**
   * Up to `maxCount` events after `from` (exclusive; null = from the start), in global order:
   * one page of what subscribeAll would deliver by now. For readers that stop (audit, lag).
   */
  readAll(from: Position | null, maxCount: number): Promise<RecordedEvent[]>;
  /** How many events follow `from` (exclusive), counting no further than `cap`: lag gauges. */
  countEventsAfter(from: Position | null, cap: number): Promise<number>;
  /** Position of the newest event visible to readers (null when the log is empty). */
  headPosition(): Promise<Position | null>;
  /** How many events the log holds (an estimate is fine): progress bars and ETAs only. */
  countEvents(): Promise<number>;
  /**
   * The log as a table of `pool`'s own database, when this store keeps it there (the PostgreSQL
   * store on that pool): a rebuild then projects it where it lies instead of reading it out.
   * Undefined for a log elsewhere (EventStoreDB) or in another database.
   */
  logInDatabase?(pool: unknown): LogInDatabase | undefined;
  close(): Promise<void>;
}

/** Anything that runs a query on the database of the log (a pool, or a client inside a transaction). */
export interface SqlClient {
  query<Row = any>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount?: number | null }>;
}

/** The log read inside its own database (EventStore.logInDatabase). */
export interface LogInDatabase {
  /**
   * A FROM item named `log`: every event up to `upTo` (inclusive), in no particular order, as
   * position (bigint), stream_id, revision (bigint: a stream's order), type and data (json).
   */
  eventsUpTo(upTo: Position): string;
  /**
   * The same events as `eventsUpTo`, as `parts` FROM items named `log` that share none and
   * together hold them all: one for each of the connections that read them at once.
   */
  partsUpTo(db: SqlClient, upTo: Position, parts: number): Promise<string[]>;
  /** How many events there are up to `upTo` (inclusive). */
  countUpTo(db: SqlClient, upTo: Position): Promise<number>;
  /**
   * The events of `types` up to `upTo` (inclusive), in global order, as pages, read on `client`
   * inside its open transaction (a cursor).
   */
  readTypesUpTo(client: SqlClient, types: readonly string[], upTo: Position, pageSize: number): AsyncIterable<RecordedEvent[]>;
  /**
   * Copies the events up to `upTo` of every type but `types` into the new table `into` (a
   * scratch table the caller names and drops), and resolves to the same reads over that copy
   * and to how many events it holds: the few events a rebuild reads page by page, without a
   * scan of the whole log each time.
   */
  copyExcept(client: SqlClient, into: string, types: readonly string[], upTo: Position): Promise<{ log: LogInDatabase; events: number }>;
  /**
   * Tells the log's readers not to wait for the transaction open on `client`, which must append
   * no event: a long transaction of a rebuild (the PostgreSQL log's readers otherwise stop below
   * every transaction in progress). Call inside the transaction; see HorizonExemption.
   */
  exemptFromHorizon(client: SqlClient): Promise<HorizonExemption>;
}

/** A transaction the log's readers do not wait for (LogInDatabase.exemptFromHorizon). */
export interface HorizonExemption {
  /** The transaction's id. */
  readonly transactionId: bigint;
  /**
   * Throws when the transaction appended events: readers may have passed it, so they must never
   * commit. Call on the transaction's connection just before COMMIT (and roll back if it throws).
   */
  beforeCommit(): Promise<void>;
  /** Ends the exemption. Call once the transaction ended, committed or not; never throws. */
  end(): Promise<void>;
}

/**
 * `work` in a transaction on `client` that the log's readers do not wait for (it must append no
 * event): committed when `work` resolves, rolled back when it throws; the exemption ends either way.
 */
export async function inExemptTransaction<T>(log: Pick<LogInDatabase, 'exemptFromHorizon'>, client: SqlClient, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  let exemption: HorizonExemption | undefined;
  try {
    exemption = await log.exemptFromHorizon(client);
    const result = await work();
    await exemption.beforeCommit();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await exemption?.end();
  }
}

export class WrongExpectedRevision extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevision';
  }
}

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

/** Positions travel as "commit/prepare" strings in JSON and checkpoints. */
export function formatPosition(p: Position): string {
  return `${p.commit}/${p.prepare}`;
}

export function parsePosition(text: string): Position {
  const [commit, prepare] = text.split('/');
  return { commit: BigInt(commit!), prepare: BigInt(prepare!) };
}
