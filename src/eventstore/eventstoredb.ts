// EventStoreDB adapter of the EventStore port (@eventstore/db-client, gRPC).
//
// Streams map 1:1 to EventStoreDB streams (optionally under a prefix: `streamPrefix`, which
// lets several stores, e.g. the contract tests, share one server without seeing each
// other). Positions are EventStoreDB's own (commit, prepare) log positions.
//
// The client's traps, and what is done about each:
// - Positions and revisions are bigints. They are copied as bigints, never through
//   Number(), and never JSON.stringify'd raw (it throws on bigint): they travel as
//   "commit/prepare" text (port.formatPosition). A stream read from a server before 22.6
//   carries no position (or 2^64-1): that is refused loudly rather than passed on.
// - A catch-up subscription can drop silently on a half-open connection, and the client
//   does not resubscribe: catch-up.ts owns the position, resubscribes after the last one
//   delivered with backoff on errors, on end, and on silence (no event, checkpoint or
//   caught-up signal for `silenceMs` while the log holds events not yet delivered).
// - `fromPosition` of subscribeToAll is exclusive (readAll's is inclusive): subscriptions
//   start at the port's `from` as is, and whatever is replayed at or before it is dropped
//   anyway, so neither a duplicate nor a gap can come from it.
// - Backpressure: subscriptions and reads are consumed with `for await` (never
//   `.on('data', async ...)`, which would not wait), the subscription's buffer is bounded,
//   and the port's `ready()` is awaited before each page is gathered.
// - A missing stream throws StreamNotFoundError while iterating: readStream maps it to [].
// - Conflicts throw WrongExpectedVersionError: mapped to the port's WrongExpectedRevision
//   with the stream's actual revision (a negative one, as some servers report it, is
//   'no_stream').
//
// EventStoreDB has no transaction across streams; the port only asks appendMany to be
// atomic per stream, which one append per stream is, and to tell each stream's caller its
// own outcome: a stream whose append failed is reported `failed`, the streams written are
// reported written (the call rejects only when none was). Read models, leases and
// everything else stay in PostgreSQL.
import {
  BACKWARDS,
  END,
  ErrorType,
  EventStoreDBClient,
  FORWARDS,
  jsonEvent,
  START,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type AppendExpectedRevision,
  type ResolvedEvent,
} from '@eventstore/db-client';
import { Observable } from 'rxjs';
import { followCatchUp, type CatchUpItem, type CatchUpSource, type CatchUpStream, type ResubscribeReason } from './catch-up.ts';
import { hasUnstorableCharacters } from '../domain/storable.ts';
import { UnstorableData, holdsUnstorableText } from './unstorable.ts';
import {
  checkAppend,
  comparePositions,
  WrongExpectedRevision,
  type AppendResult,
  type BatchAppendResult,
  type EventData,
  type EventStore,
  type ExpectedRevision,
  type Position,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
} from './port.ts';

export interface EventStoreDbOptions {
  /**
   * Every stream of this store is stored as `${streamPrefix}${streamId}`, and only those
   * streams are read back (subscriptions filter on the prefix). Default '': all non-system
   * streams ($-prefixed streams and event types are EventStoreDB's own and never delivered).
   */
  readonly streamPrefix?: string;
  /** Appends (or stream reads) in flight at once in appendMany / readStreams (default 32). */
  readonly concurrency?: number;
  /** A subscription silent this long (no event, checkpoint or caught-up signal) is checked, and replaced if behind (default 30 s). */
  readonly silenceMs?: number;
  /** Told when a subscription is replaced (for logs). */
  readonly onResubscribe?: (info: { after: Position | null; reason: ResubscribeReason; error?: unknown; delayMs: number }) => void;
}

const DEFAULT_BATCH_SIZE = 500;
/** Records sampled from the end of the log by countEvents. */
const COUNT_SAMPLE = 1000;
/** 2^64-1: what a server that does not know a record's log position sends instead. */
const NO_POSITION = 2n ** 64n - 1n;
/** Transient failures of one append are retried with the same event ids (the server makes a repeat a no-op). */
const APPEND_ATTEMPTS = 3;

export class EventStoreDbStore implements EventStore {
  private readonly client: EventStoreDBClient;
  private readonly ownsClient: boolean;
  private readonly prefix: string;
  private readonly concurrency: number;
  private readonly subscriptions = new Set<{ abort(): void; done: Promise<void> }>();
  private closed = false;

  /** `connection`: a connection string (esdb://host:2113?tls=false) or a client the caller owns and disposes. */
  constructor(
    connection: string | EventStoreDBClient,
    private readonly options: EventStoreDbOptions = {},
  ) {
    this.ownsClient = typeof connection === 'string';
    this.client = typeof connection === 'string' ? EventStoreDBClient.connectionString(connection) : connection;
    this.prefix = options.streamPrefix ?? '';
    if (this.prefix.startsWith('$')) throw new RangeError('streamPrefix must not start with $ (system streams)');
    this.concurrency = Math.max(1, options.concurrency ?? 32);
  }

  async append(streamId: string, events: readonly EventData[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    this.assertOpen();
    validateAppends([{ streamId, events, expectedRevision }]);
    return this.appendOne({ streamId, events, expectedRevision });
  }

  async appendMany(appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
    this.assertOpen();
    validateAppends(appends);
    // One append per stream, several at once, each atomic on its own and each with its own
    // answer: written, a conflict, or failed (an outage, after appendOne's retries). A stream
    // written stays written whatever befalls the others, so its caller must be told so (a
    // caller told "failed" would retry, and act twice): one failure fails only its own stream.
    // The call as a whole rejects, with the first failure, only when no stream was written.
    const settled = await mapConcurrently(appends, this.concurrency, async (append): Promise<BatchAppendResult> => {
      try {
        return { streamId: append.streamId, ok: true, result: await this.appendOne(append) };
      } catch (error) {
        if (error instanceof WrongExpectedRevision) return { streamId: append.streamId, ok: false, conflict: error };
        return { streamId: append.streamId, ok: false, failed: error };
      }
    });
    if (!settled.some((outcome) => outcome.ok)) {
      for (const outcome of settled) if ('failed' in outcome) throw outcome.failed;
    }
    return settled;
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    this.assertOpen();
    const events: RecordedEvent[] = [];
    const read = this.client.readStream(this.prefix + streamId, { direction: FORWARDS, fromRevision: START });
    try {
      for await (const resolved of read) {
        const event = this.toRecorded(resolved, 'stream');
        if (event) events.push(event);
      }
    } catch (error) {
      if (isErrorType(error, ErrorType.STREAM_NOT_FOUND)) return [];
      throw error;
    }
    return events;
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    const ids = [...new Set(streamIds)];
    const streams = await mapConcurrently(ids, this.concurrency, (id) => this.readStream(id));
    return new Map(ids.map((id, i) => [id, streams[i]!]));
  }

  subscribeAll(from: Position | null, options: SubscribeOptions = {}): Observable<RecordedEvent[]> {
    return new Observable<RecordedEvent[]>((subscriber) => {
      if (this.closed) {
        subscriber.error(new Error('event store is closed'));
        return;
      }
      const controller = new AbortController();
      const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
      const handle = { abort: () => controller.abort(), done: Promise.resolve() };
      handle.done = followCatchUp(
        this.catchUpSource(batchSize),
        from,
        { batchSize, ready: options.ready, silenceMs: this.options.silenceMs, onResubscribe: this.options.onResubscribe },
        (page) => subscriber.next(page),
        controller.signal,
      )
        .then(
          () => {
            // Ended by close() rather than by the subscriber: tell it there is no more.
            if (this.closed) subscriber.complete();
          },
          (error: unknown) => {
            if (!controller.signal.aborted) subscriber.error(error);
          },
        )
        .finally(() => this.subscriptions.delete(handle));
      this.subscriptions.add(handle);
      return () => controller.abort();
    });
  }

  async headPosition(): Promise<Position | null> {
    this.assertOpen();
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: Number.MAX_SAFE_INTEGER });
    try {
      for await (const resolved of read) {
        const event = this.toRecorded(resolved, 'all');
        if (event) return event.position;
      }
      return null;
    } finally {
      await read.cancel().catch(() => undefined);
    }
  }

  /**
   * An estimate (the port allows one; it feeds progress bars): EventStoreDB keeps no count of
   * $all. The newest COUNT_SAMPLE records of the log give the share of them that are this
   * store's events and their bytes per record; the commit position of the newest one is the
   * size of the log in bytes. A log shorter than the sample is counted exactly.
   */
  async countEvents(): Promise<number> {
    this.assertOpen();
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: COUNT_SAMPLE });
    let records = 0;
    let ours = 0;
    let newest: Position | undefined;
    let oldest: Position | undefined;
    for await (const resolved of read) {
      records++;
      const position = resolved.event?.position;
      if (position) {
        newest ??= position;
        oldest = position;
      }
      if (this.toRecorded(resolved, 'all')) ours++;
    }
    return estimateCount({ records, ours, newest, oldest, complete: records < COUNT_SAMPLE });
  }

  async readAll(from: Position | null, maxCount: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    if (maxCount <= 0) return events;
    for await (const event of this.eventsAfter(from)) {
      events.push(event);
      if (events.length >= maxCount) break;
    }
    return events;
  }

  async countEventsAfter(from: Position | null, cap: number): Promise<number> {
    let n = 0;
    if (cap <= 0) return n;
    // EventStoreDB keeps no count of $all: the events are read, and counted, up to the cap.
    for await (const _event of this.eventsAfter(from)) if (++n >= cap) break;
    return n;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = [...this.subscriptions];
    for (const s of running) s.abort();
    await Promise.all(running.map((s) => s.done));
    if (this.ownsClient) await this.client.dispose();
  }

  // -------------------------------------------------------------------------

  private async appendOne({ streamId, events, expectedRevision }: StreamAppend): Promise<AppendResult> {
    const stream = this.prefix + streamId;
    // Ids made once, so a retry after a transient failure is the same write, which the server
    // recognises (idempotent append) instead of writing the events twice.
    const proposed = events.map((event) => jsonEvent({
      type: event.type,
      // The client JSON.stringifies data: null stays null; undefined (no JSON) is stored as null.
      data: (event.data ?? null) as never,
      metadata: event.metadata,
    }));
    for (let attempt = 1; ; attempt++) {
      let result;
      try {
        result = await this.client.appendToStream(stream, proposed, { expectedRevision: toClientExpectedRevision(expectedRevision) });
      } catch (error) {
        if (isErrorType(error, ErrorType.WRONG_EXPECTED_VERSION)) {
          throw toWrongExpectedRevision(streamId, expectedRevision, (error as { actualVersion?: unknown }).actualVersion);
        }
        if (attempt >= APPEND_ATTEMPTS || !isTransient(error)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        continue;
      }
      // The port promises the position of the last event written, the one subscribers will
      // see. A one-event append's answer is that event's position; for several events the
      // answer's position is the write's, whose (commit, prepare) pair need not be the last
      // event's, so that event is read back (one more round trip, multi-event appends only).
      const position =
        events.length === 1 && result.position
          ? toPosition(result.position, 'append')
          : await this.positionOf(stream, result.nextExpectedRevision).catch((error: unknown) => {
              if (result.position) return toPosition(result.position, 'append');
              throw error;
            });
      return { nextExpectedRevision: result.nextExpectedRevision, position };
    }
  }

  /** This store's events after `from` (exclusive), read forwards in chunks (readAll's fromPosition is inclusive). */
  private async *eventsAfter(from: Position | null): AsyncGenerator<RecordedEvent> {
    this.assertOpen();
    let after = from;
    for (;;) {
      const read = this.client.readAll({ direction: FORWARDS, fromPosition: after ?? START, maxCount: DEFAULT_BATCH_SIZE });
      let records = 0;
      let last: Position | null = null;
      try {
        for await (const resolved of read) {
          records++;
          if (resolved.event?.position) last = toPosition(resolved.event.position);
          const event = this.toRecorded(resolved, 'all');
          if (event && (!after || comparePositions(event.position, after) > 0)) yield event;
        }
      } finally {
        await read.cancel().catch(() => undefined);
      }
      if (records < DEFAULT_BATCH_SIZE || !last || (after && comparePositions(last, after) <= 0)) return;
      after = last;
    }
  }

  /** The log position of one event of a stream, as readers see it. */
  private async positionOf(stream: string, revision: bigint): Promise<Position> {
    const read = this.client.readStream(stream, { direction: FORWARDS, fromRevision: revision, maxCount: 1 });
    for await (const resolved of read) {
      if (resolved.event?.revision === revision) return toPosition(resolved.event.position, 'event read from a stream');
    }
    throw new Error(`EventStoreDB: event ${revision} of ${stream} not found right after it was written`);
  }

  private catchUpSource(batchSize: number): CatchUpSource {
    const highWaterMark = Math.max(16, Math.min(batchSize, 1024));
    const alive = { current: () => {} };
    // Checkpoints are only a sign of life here: one may be handled before events still in the
    // client's buffer (and some servers send prepare 0), so they are never a resume position.
    const checkpoints = { checkpointInterval: 1, checkpointReached: () => alive.current() };
    const filter = this.prefix
      ? streamNameFilter({ prefixes: [this.prefix], ...checkpoints })
      : streamNameFilter({ regex: '^[^$]', ...checkpoints });
    return {
      open: (after, onAlive): CatchUpStream => {
        alive.current = onAlive;
        const subscription = this.client.subscribeToAll({ fromPosition: after ?? START, filter }, { highWaterMark });
        subscription.on('confirmation', onAlive).on('caughtUp', onAlive).on('fellBehind', onAlive);
        const toRecorded = (resolved: AllStreamResolvedEvent) => this.toRecorded(resolved, 'all');
        return {
          async *[Symbol.asyncIterator](): AsyncGenerator<CatchUpItem> {
            for await (const resolved of subscription as AsyncIterable<AllStreamResolvedEvent>) {
              const position = resolved.event?.position;
              if (!position) continue;
              const event = toRecorded(resolved);
              yield event ? { position: event.position, event } : { position: toPosition(position) };
            }
          },
          async close() {
            await subscription.unsubscribe().catch(() => undefined);
            subscription.destroy();
          },
        };
      },
      hasEventsAfter: async (after) => {
        const head = await this.headPosition();
        return head !== null && (after === null || comparePositions(head, after) > 0);
      },
      isTransient,
    };
  }

  /** This store's event, or undefined for one of another store or of EventStoreDB itself. */
  private toRecorded(resolved: ResolvedEvent | AllStreamResolvedEvent, from: 'stream' | 'all'): RecordedEvent | undefined {
    const event = resolved.event;
    if (!event || !isOwnEvent(event.streamId, event.type, this.prefix)) return undefined;
    return toRecordedEvent(event, this.prefix, from);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('event store is closed');
  }
}

// ---------------------------------------------------------------------------
// Mapping (exported for the unit tests)

/** The port's expected revision as the client's; bigints pass as they are. */
export function toClientExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'no_stream') return 'no_stream';
  if (expected === 'any') return 'any';
  return expected;
}

/** A client position as the port's, refusing what is not a real log position. */
export function toPosition(position: { commit: unknown; prepare: unknown } | undefined, what = 'event'): Position {
  if (!position || typeof position.commit !== 'bigint' || typeof position.prepare !== 'bigint' || position.commit === NO_POSITION) {
    throw new Error(`EventStoreDB gave no log position for an ${what} (stream reads carry positions from server 22.6 on)`);
  }
  return { commit: position.commit, prepare: position.prepare };
}

/** The client's WrongExpectedVersionError as the port's WrongExpectedRevision. */
export function toWrongExpectedRevision(streamId: string, expected: ExpectedRevision, actual: unknown): WrongExpectedRevision {
  let current: bigint | 'no_stream' = 'no_stream';
  if (typeof actual === 'bigint') current = actual < 0n ? 'no_stream' : actual;
  else if (typeof actual === 'string' && /^\d+$/.test(actual)) current = BigInt(actual);
  return new WrongExpectedRevision(streamId, expected, current);
}

export function isOwnEvent(streamId: string, type: string, prefix: string): boolean {
  if (streamId.startsWith('$') || type.startsWith('$')) return false;
  return streamId.startsWith(prefix);
}

interface ClientRecordedEvent {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: unknown;
  metadata?: unknown;
  created: Date;
  position?: { commit: bigint; prepare: bigint };
}

export function toRecordedEvent(event: ClientRecordedEvent, prefix: string, from: 'stream' | 'all' = 'all'): RecordedEvent {
  const metadata = event.metadata;
  return {
    id: event.id,
    streamId: event.streamId.slice(prefix.length),
    revision: event.revision,
    position: toPosition(event.position, from === 'stream' ? 'event read from a stream' : 'event'),
    type: event.type,
    data: event.data,
    metadata: metadata && typeof metadata === 'object' && !Array.isArray(metadata) && !(metadata instanceof Uint8Array) ? (metadata as Record<string, unknown>) : {},
    recordedAt: event.created,
  };
}

/** See countEvents. */
export function estimateCount(sample: { records: number; ours: number; newest?: Position; oldest?: Position; complete: boolean }): number {
  const { records, ours, newest, oldest, complete } = sample;
  if (complete || !newest || !oldest || records < 2) return ours;
  const span = newest.commit - oldest.commit;
  if (span <= 0n) return ours;
  // Integer arithmetic on bigints until the (small) ratio: positions may exceed 2^53.
  const recordsInLog = (newest.commit * BigInt(records - 1)) / span + 1n;
  const estimate = (recordsInLog * BigInt(ours)) / BigInt(records);
  return Math.max(ours, Number(estimate > BigInt(Number.MAX_SAFE_INTEGER) ? BigInt(Number.MAX_SAFE_INTEGER) : estimate));
}

// ---------------------------------------------------------------------------

function validateAppends(appends: readonly StreamAppend[]): void {
  const seen = new Set<string>();
  for (const append of appends) {
    checkAppend(append);
    const { streamId, events } = append;
    if (streamId.startsWith('$')) throw new TypeError(`stream ${streamId}: $-prefixed streams are EventStoreDB's own`);
    if (hasUnstorableCharacters(streamId)) throw new UnstorableData(streamId, 'stream id contains U+0000 or an unpaired UTF-16 surrogate');
    // EventStoreDB would keep them; the read models (PostgreSQL jsonb and text) could not.
    if (holdsUnstorableText(events)) {
      throw new UnstorableData(streamId, `stream ${streamId}: event data contains U+0000 or an unpaired UTF-16 surrogate, which the read models cannot hold`);
    }
    if (seen.has(streamId)) throw new TypeError(`stream ${streamId} appears twice in one batch`);
    seen.add(streamId);
  }
}

function isErrorType(error: unknown, type: ErrorType): boolean {
  return typeof error === 'object' && error !== null && (error as { type?: unknown }).type === type;
}

/** Failures a new attempt (or a new subscription) can get past: the server's transient ones and the transport's. */
export function isTransient(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { type, code } = error as { type?: unknown; code?: unknown };
  if (typeof type === 'string') return TRANSIENT_ERRORS.has(type);
  // A gRPC status, or a socket or stream error (ECONNRESET, ERR_STREAM_PREMATURE_CLOSE).
  return typeof code === 'number' || typeof code === 'string';
}

const TRANSIENT_ERRORS = new Set<string>([
  ErrorType.UNAVAILABLE,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.TIMEOUT,
  ErrorType.CANCELLED,
  ErrorType.NOT_LEADER,
  ErrorType.UNKNOWN,
]);

/** `fn` over `items`, at most `limit` at once; results in input order; rejects after all settle. */
export async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let failure: { error: unknown } | undefined;
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}
