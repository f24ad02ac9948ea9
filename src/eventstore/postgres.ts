// PostgreSQL adapter of the EventStore port.
//
// The late-commit cure. A position from a sequence is handed out when a row is
// inserted, not when its transaction commits: transaction A takes position 10,
// transaction B takes 11 and commits first, a reader polling `position > 9`
// sees 11, moves its checkpoint past it, and never sees 10 when A commits. So
// each row also records its transaction (`transaction_id`, from
// pg_current_xact_id()), readers walk the log in (transaction_id, position)
// order, and they only read rows whose transaction is below the horizon
// (HORIZON, horizon.ts): the oldest transaction still running anywhere on the
// server, in the reading statement's snapshot, that is not registered as exempt.
// Every transaction below that horizon has finished or writes no events, so no
// row can ever appear behind a reader's checkpoint. The price is latency, not
// loss: while some transaction runs long, readers wait for it. Positions are
// therefore { commit: transaction_id, prepare: position }.
//
// Exempt are only transactions that append no events and say so
// (LogInDatabase.exemptFromHorizon): a rebuild's replays, each one transaction of
// seconds to a minute, which would otherwise hold back every reader of the log
// (the live projector, read-your-writes, e-mail, webhooks) while they run.
//
// Hence the rule, for every other write transaction on this server (the log's or
// any other table's, since the horizon is server-wide): no external I/O inside it.
// No SMTP, HTTP or platform call between BEGIN and COMMIT: one slow answer would
// hold back every reader of the log (projector, read-your-writes, scheduler).
// Record the intent, commit, then talk to the outside world (the e-mail outbox,
// src/notify/outbox.ts, is the pattern).
//
// Readers are woken by LISTEN/NOTIFY, sent after the append commits (announcer.ts
// says why not inside it), and poll as a fallback, since the horizon also moves
// when a transaction that wrote no events ends.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Observable, type Subscriber } from 'rxjs';
import {
  appendError,
  checkAppend,
  WrongExpectedRevision,
  type AppendResult,
  type BatchAppendResult,
  type EventData,
  type EventStore,
  type ExpectedRevision,
  type Position,
  formatPosition,
  type LogInDatabase,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
} from './port.ts';
import { EVENTS_CHANNEL } from './postgres-schema.ts';
import { HORIZON } from './horizon.ts';
import { AppendAnnouncer } from './announcer.ts';
import { LogTail } from './log-tail.ts';
import { postgresLog } from './postgres-log.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './postgres-rows.ts';
import { hasUnstorableCharacters } from '../domain/storable.ts';
import { prepared } from '../db/prepared.ts';
import { arrayLiteral } from '../db/array-literal.ts';
import { UnstorableData, holdsUnstorableText } from './unstorable.ts';

export interface PostgresEventStoreOptions {
  /** End the pool in close() (default false: the caller shares the pool and ends it). */
  readonly ownsPool?: boolean;
  /** Longest wait between polls of a caught-up subscription, in ms (default 500). */
  readonly pollIntervalMs?: number;
}

/** Anything that runs a query: a pool, or a client inside the caller's transaction. */
type Queryable = pg.Pool | pg.ClientBase;

const DEFAULT_BATCH_SIZE = 500;
/** First wait after an empty read; doubles up to pollIntervalMs. */
const FIRST_POLL_MS = 10;

const READ_STREAM = prepared(`select ${EVENT_COLUMNS} from es.events where stream_id = $1 order by es.events.revision`);
const READ_STREAMS = prepared(`select ${EVENT_COLUMNS} from es.events where stream_id = any($1::text[]) order by es.events.stream_id, es.events.revision`);

/**
 * A subscription that has seen neither an event nor a notification for QUIET_AFTER_MS, while
 * LISTEN works, polls only every QUIET_POLL_MS: the poll is there for the horizon moving
 * without a notification (a transaction that wrote no events ended), and that only matters
 * for events whose own NOTIFY has just woken the subscription, which starts it polling fast
 * again. An idle service then costs a few queries a minute instead of two a second per
 * subscription (the projector, the e-mail and webhook reactors).
 */
const QUIET_AFTER_MS = 30_000;
const QUIET_POLL_MS = 5_000;

export class PostgresEventStore implements EventStore {
  private readonly notifier: Notifier;
  private readonly announcer: AppendAnnouncer;
  private readonly subscriptions = new Set<{ stop(): void; done: Promise<void> }>();
  private readonly pollIntervalMs: number;
  private readonly tail = new LogTail();
  /** Reads of the log under way for subscriptions, by the position they read after. */
  private readonly tailReads = new Map<string, { readAt: number; page: Promise<RecordedEvent[]> }>();
  private closed = false;
  private log: LogInDatabase | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: PostgresEventStoreOptions = {},
  ) {
    this.notifier = new Notifier(pool);
    this.announcer = new AppendAnnouncer(pool);
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
  }

  async append(streamId: string, events: readonly EventData[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [outcome] = await this.appendMany([{ streamId, events, expectedRevision }]);
    if (!outcome!.ok) throw appendError(outcome!);
    return outcome!.result;
  }

  async appendMany(appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
    this.assertOpen();
    const outcomes = await appendManyOn(this.pool, appends);
    if (outcomes.some((outcome) => outcome.ok)) this.announcer.announce();
    return outcomes;
  }

  async readStream(streamId: string): Promise<RecordedEvent[]> {
    this.assertOpen();
    const { rows } = await this.pool.query<EventRow>({ ...READ_STREAM, values: [streamId] });
    return rows.map(toRecordedEvent);
  }

  async readStreams(streamIds: readonly string[]): Promise<Map<string, RecordedEvent[]>> {
    this.assertOpen();
    const streams = new Map<string, RecordedEvent[]>(streamIds.map((id) => [id, []]));
    const { rows } = await this.pool.query<EventRow>({ ...READ_STREAMS, values: [[...streams.keys()]] });
    for (const row of rows) streams.get(row.stream_id)!.push(toRecordedEvent(row));
    return streams;
  }

  async headPosition(): Promise<Position | null> {
    this.assertOpen();
    const { rows } = await this.pool.query<{ transaction_id: string; position: string }>(
      `select transaction_id::text, position from es.events
        where transaction_id < ${HORIZON}
        order by es.events.transaction_id desc, es.events.position desc limit 1`,
    );
    return rows[0] ? { commit: BigInt(rows[0].transaction_id), prepare: BigInt(rows[0].position) } : null;
  }

  async readAll(from: Position | null, maxCount: number): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readPage(from ?? { commit: 0n, prepare: 0n }, maxCount);
  }

  async countEventsAfter(from: Position | null, cap: number): Promise<number> {
    this.assertOpen();
    const after = from ?? { commit: 0n, prepare: 0n };
    const { rows } = await this.pool.query<{ n: string }>(
      `select count(*) as n from (select 1 from es.events
        where (transaction_id, position) > ($1::text::xid8, $2::bigint)
          and transaction_id < ${HORIZON}
        limit $3) behind`,
      [after.commit.toString(), after.prepare.toString(), cap],
    );
    return Number(rows[0]!.n);
  }

  async countEvents(): Promise<number> {
    this.assertOpen();
    const { rows } = await this.pool.query<{ n: string }>('select count(*) as n from es.events');
    return Number(rows[0]!.n);
  }

  logInDatabase(pool: unknown): LogInDatabase | undefined {
    // The same pool object is the same database; another pool may be another database.
    return pool === this.pool ? (this.log ??= postgresLog(this.pool)) : undefined;
  }

  subscribeAll(from: Position | null, options: SubscribeOptions = {}): Observable<RecordedEvent[]> {
    return new Observable<RecordedEvent[]>((subscriber) => {
      if (this.closed) {
        subscriber.error(new Error('event store is closed'));
        return;
      }
      const wakeup = new Wakeup();
      const stopped = new AbortController();
      const stopListening = this.notifier.add(() => wakeup.fire());
      const handle = {
        stop: () => {
          stopped.abort();
          wakeup.fire();
        },
        done: Promise.resolve(),
      };
      handle.done = this.follow(from, options, subscriber, stopped.signal, wakeup)
        .catch((error: unknown) => {
          if (!stopped.signal.aborted) subscriber.error(error);
        })
        .finally(() => {
          stopListening();
          this.subscriptions.delete(handle);
          // Ended by close() rather than by the subscriber: tell it there is no more.
          if (this.closed) subscriber.complete();
        });
      this.subscriptions.add(handle);
      return () => {
        handle.stop();
        stopListening();
      };
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const running = [...this.subscriptions];
    for (const s of running) s.stop();
    await Promise.all(running.map((s) => s.done));
    await this.notifier.close();
    await this.announcer.idle();
    if (this.options.ownsPool) await this.pool.end();
  }

  /** The loop behind one subscription: read a page, hand it over, and wait when caught up. */
  private async follow(
    from: Position | null,
    options: SubscribeOptions,
    subscriber: Subscriber<RecordedEvent[]>,
    stopped: AbortSignal,
    wakeup: Wakeup,
  ): Promise<void> {
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    let after: Position = from ?? { commit: 0n, prepare: 0n };
    let idleMs = FIRST_POLL_MS;
    let activeAt = performance.now();
    let wokeAt = activeAt;
    let first = true;
    let readAt = Number.NEGATIVE_INFINITY;
    while (!stopped.aborted) {
      if (options.ready) await options.ready();
      if (stopped.aborted) return;
      readAt = performance.now();
      const { page, upToDate } = await this.readShared(after, batchSize, wokeAt, first);
      first = false;
      if (stopped.aborted) return;
      if (page.length > 0) {
        after = page[page.length - 1]!.position;
        subscriber.next(page);
        idleMs = FIRST_POLL_MS;
        activeAt = performance.now();
        if (page.length === batchSize || !upToDate) continue; // more may be waiting: no pause
      }
      let notified = await wakeup.wait(idleMs);
      const early = readAt + (options.minReadIntervalMs ?? 0) - performance.now();
      if (early > 0 && !stopped.aborted) {
        await sleep(early, undefined, { signal: stopped }).catch(() => undefined);
        // The read below covers what woke the subscription meanwhile.
        notified = wakeup.take() || notified;
      }
      // A poll needs a read sent from now on; a notification, one sent since it fired.
      wokeAt = notified ? wakeup.firedAt : performance.now();
      if (notified) activeAt = wokeAt;
      const quiet = this.notifier.listening && performance.now() - activeAt > QUIET_AFTER_MS;
      idleMs = notified ? FIRST_POLL_MS : Math.min(idleMs * 2, quiet ? Math.max(QUIET_POLL_MS, this.pollIntervalMs) : this.pollIntervalMs);
    }
  }

  /**
   * A subscription's page: from the stretch of the log this process read last (log-tail.ts),
   * from a read of the same page under way, or else from the database. Not `upToDate` when it
   * may lack events announced to this reader, who then reads on at once.
   */
  private async readShared(after: Position, limit: number, wokeAt: number, first: boolean): Promise<{ page: RecordedEvent[]; upToDate: boolean }> {
    let kept = this.tail.serve(after, limit, wokeAt);
    if (kept?.upToDate) return kept;
    const key = formatPosition(after);
    const under = this.tailReads.get(key);
    // The readers one append wakes follow the log a few pages apart and often meet here: a read
    // under way is shared even when it may end short of what woke a reader, who then reads only
    // the rest; so is what an earlier read kept. A subscription's first read takes what was kept
    // only when it is up to date (or just read, by the read it shared): it may start anywhere in
    // what this process keeps, which an operator may have mended in the database since (a parked
    // event fixed for its retry).
    if (under) {
      await under.page.catch(() => undefined);
      kept = this.tail.serve(after, limit, wokeAt);
    }
    if (kept && (kept.upToDate || !first || under)) return kept;
    const read = { readAt: performance.now(), page: this.readPage(after, limit) };
    this.tailReads.set(key, read);
    try {
      const page = await read.page;
      this.tail.remember(after, limit, page, read.readAt);
      return { page, upToDate: true };
    } finally {
      if (this.tailReads.get(key) === read) this.tailReads.delete(key);
    }
  }

  private async readPage(after: Position, limit: number): Promise<RecordedEvent[]> {
    // Not a named statement (src/db/prepared.ts): collection, whose pages are thousands of
    // events, ran 3.5% slower with it in runs alternated on 100,000 videos.
    const { rows } = await this.pool.query<EventRow>(
      `select ${EVENT_COLUMNS} from es.events
        where (transaction_id, position) > ($1::text::xid8, $2::bigint)
          and transaction_id < ${HORIZON}
        order by es.events.transaction_id, es.events.position
        limit $3`,
      [after.commit.toString(), after.prepare.toString(), limit],
    );
    return rows.map(toRecordedEvent);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('event store is closed');
  }
}

// ---------------------------------------------------------------------------
// Appending

// One statement for the whole batch, and no lock beyond the unique index on
// (stream_id, revision): that index is what decides a race. Each stream's first event
// goes in first, at the revision its expected revision implies; when another
// transaction holds or has committed that revision, ON CONFLICT leaves the stream
// out, and its other events follow only for the streams whose first event went in.
// Nothing here raises an error for a conflict, which would abort every stream of the
// batch. (An earlier version kept each stream's revision in a row of its own, locked
// and updated on every append: two more heap writes per stream. Without them, the
// appends of 100,000 snapshot events took 2.0-2.1 s of statement time instead of 2.4-2.8.)
//
// ON CONFLICT is speculative insertion: an index probe before each row and a confirmation
// record in the WAL after it, about 2.5 µs of the 17 a snapshot's append costs. On a pool,
// where the statement is its own transaction, the store first runs it without
// (OPTIMISTIC_APPEND): a race then raises unique_violation and rolls the whole statement
// back, and the batch runs again with it (SAFE_APPEND). Races are rare (a scheduler holds
// its organizations' leases).
const appendSql = (onConflict: string) => `
with input as (
  select ord::int, stream_id, kind, expected
    from unnest($1::text[], $2::text[], $3::bigint[]) with ordinality as t(stream_id, kind, expected, ord)
),
base as (
  -- The revision a stream's events come after, or null when its expected revision is not its last.
  select i.ord, i.stream_id,
         case i.kind
           when 'no_stream' then -1
           when 'revision' then (select e.revision from es.events e where e.stream_id = i.stream_id and e.revision = i.expected limit 1)
           else coalesce((select max(e.revision) from es.events e where e.stream_id = i.stream_id), -1)
         end as before
    from input i
),
events as (
  select e.o, e.i, e.t, e.d::json as d, e.m::json as m
    from unnest($4::int[], $5::int[], $6::text[], string_to_array($7, chr(10)), string_to_array($8, chr(10))) as e(o, i, t, d, m)
),
head as (
  insert into es.events (stream_id, revision, type, data, metadata)
  select b.stream_id, b.before + 1, e.t, e.d, e.m
    from events e join base b on b.ord = e.o
   where e.i = 1 and b.before is not null
   order by b.stream_id -- two batches meet on their streams in one order: no deadlock
  ${onConflict}
  returning stream_id, revision, position
),
rest as (
  -- Cannot conflict: a revision above the head needs the head, which this transaction holds.
  insert into es.events (stream_id, revision, type, data, metadata)
  select h.stream_id, h.revision + e.i - 1, e.t, e.d, e.m
    from head h join base b on b.stream_id = h.stream_id join events e on e.o = b.ord
   where e.i > 1
   order by e.o, e.i
  returning stream_id, revision, position
)
-- Every event written; a stream with none lost its race. Folded per stream by the caller: a
-- grouping and a join back to the input here cost about 1 µs an event of a collection batch.
select stream_id, revision::text as revision, position::text as position, pg_current_xact_id()::text as transaction_id from head
union all
select stream_id, revision::text, position::text, pg_current_xact_id()::text from rest`;

/**
 * The append's two forms, each with the name under which a batch of up to PREPARED_UP_TO streams
 * (a command's own append, a group commit of the API's) runs it as a statement prepared once per
 * connection: planning the statement took 0.43 ms of server CPU per append, more than running it
 * (pg_stat_statements, 64 concurrent writers). After five runs PostgreSQL may switch a prepared
 * statement to a generic plan, which cannot see the batch's size and joins its streams
 * nested-loop style: its cost grows with the square of the batch. Measured alone (median of 15
 * appends of new streams, generic against planned for each): 16 streams 0.70 against 1.00 ms, 64
 * 1.38 against 1.48, 100 2.03 against 1.83, 500 17.9 against 6.9. Larger batches (collection's)
 * are planned for their size. Through `--only eventstore-peer --only http-track`: 64 writers 25,999
 * and 25,787 events/s against 23,265 and 24,082 when only single streams were prepared; POST
 * /videos/track 2,507 and 2,748 req/s against 2,235 and 2,268.
 */
const SAFE_APPEND = prepared(appendSql('on conflict (stream_id, revision) do nothing'));
const OPTIMISTIC_APPEND = prepared(appendSql(''));
const PREPARED_UP_TO = 64;

/**
 * The newest event committed to the log, on any connection. Not headPosition(): that stops below
 * the oldest write transaction still open anywhere on the server (a reactor's checkpoint, another
 * database's), so it can lag behind an append just made; a wait for what was just appended to be
 * projected waits for this.
 */
export async function newestCommittedOn(db: Queryable): Promise<Position | null> {
  const { rows } = await db.query<{ commit: string; prepare: string }>(
    `SELECT transaction_id::text AS commit, position::text AS prepare FROM es.events ORDER BY transaction_id DESC, position DESC LIMIT 1`,
  );
  return rows[0] ? { commit: BigInt(rows[0].commit), prepare: BigInt(rows[0].prepare) } : null;
}

/**
 * The batch append on any connection: the store's pool, or a client inside a
 * transaction of the caller (whose events then commit, and become visible to
 * subscribers, with that transaction). It does not wake subscriptions: the store
 * does after it returns, and a caller with its own transaction may call
 * announceAppended (announcer.ts) once that has committed, or leave it to their polls.
 */
export async function appendManyOn(db: Queryable, appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
  validate(appends);
  const results = new Array<BatchAppendResult>(appends.length);
  let pending = appends.map((_, index) => index);
  // A second round only for `any` streams that another transaction created
  // between our snapshot and our insert; bounded, as each round sees more.
  for (let round = 1; pending.length > 0; round++) {
    const batch = pending.map((index) => appends[index]!);
    const outcomes = await runAppend(db, batch);
    const retry: number[] = [];
    outcomes.forEach((outcome, k) => {
      const index = pending[k]!;
      if (!outcome.ok && appends[index]!.expectedRevision === 'any' && round < 3) retry.push(index);
      else results[index] = outcome;
    });
    pending = retry;
  }
  return results;
}

async function runAppend(db: Queryable, appends: readonly StreamAppend[]): Promise<BatchAppendResult[]> {
  const params = toParams(appends);
  const autocommit = db instanceof pg.Pool;
  let optimistic = autocommit;
  let rows: AppendRow[];
  for (let attempt = 1; ; attempt++) {
    const { name, text } = optimistic ? OPTIMISTIC_APPEND : SAFE_APPEND;
    try {
      const query = { name: appends.length <= PREPARED_UP_TO ? name : undefined, text, values: params, rowMode: 'array' as const };
      rows = (await db.query<AppendRow>(query)).rows;
      break;
    } catch (error) {
      const code = (error as { code?: string }).code ?? '';
      // Class 22 (data exception) and 54 (program limit exceeded): the statement's data,
      // not the server, is at fault; the same batch would fail again.
      if (code.startsWith('22') || code.startsWith('54')) {
        throw new UnstorableData(null, `PostgreSQL refused the batch's data (${code}): ${(error as Error).message}`, { cause: error });
      }
      // A race lost without ON CONFLICT: nothing was written; again, the safe way.
      if (optimistic && code === '23505') {
        optimistic = false;
        continue;
      }
      // A deadlock aborts the whole statement, so a retry on a pool (autocommit)
      // is safe; inside a caller's transaction the caller must retry.
      const deadlock = code === '40P01';
      if (!deadlock || !autocommit || attempt >= 3) throw error;
    }
  }

  // Each stream's last revision and position among the events written for it, compared as
  // digits: a collection batch returns a row for each of its thousands of events.
  const written = new Map<string, { revision: string; position: string }>();
  for (const [streamId, revision, position] of rows) {
    const last = written.get(streamId);
    if (!last) written.set(streamId, { revision, position });
    else {
      if (digitsAbove(revision, last.revision)) last.revision = revision;
      if (digitsAbove(position, last.position)) last.position = position;
    }
  }
  // One transaction wrote them all.
  const commit = rows.length > 0 ? BigInt(rows[0]![3]) : 0n;
  const conflicted = appends.filter((append) => !written.has(append.streamId)).map((append) => append.streamId);
  const actual = conflicted.length > 0 ? await currentRevisions(db, conflicted) : new Map<string, bigint>();
  return appends.map(({ streamId, expectedRevision }): BatchAppendResult => {
    const last = written.get(streamId);
    if (!last) {
      return { streamId, ok: false, conflict: new WrongExpectedRevision(streamId, expectedRevision, actual.get(streamId) ?? 'no_stream') };
    }
    return {
      streamId,
      ok: true,
      result: { nextExpectedRevision: BigInt(last.revision), position: { commit, prepare: BigInt(last.position) } },
    };
  });
}

/** a > b, for two non-negative integers written without leading zeros. */
function digitsAbove(a: string, b: string): boolean {
  return a.length === b.length ? a > b : a.length > b.length;
}

/** Read after the fact (a fresh snapshot), so the revision reported is the one that won. */
async function currentRevisions(db: Queryable, streamIds: string[]): Promise<Map<string, bigint>> {
  const { rows } = await db.query<{ stream_id: string; revision: string }>(
    'select stream_id, max(revision)::text as revision from es.events where stream_id = any($1::text[]) group by stream_id',
    [streamIds],
  );
  return new Map(rows.map((row) => [row.stream_id, BigInt(row.revision)]));
}

/** stream_id, revision, position, transaction_id: as an array, which pg fills by index rather than by name. */
type AppendRow = [streamId: string, revision: string, position: string, transactionId: string];

/**
 * Streams and events as parallel arrays, except the events' data and metadata: each is one
 * text of JSON documents a line apart (JSON.stringify never writes a line break), which
 * PostgreSQL splits with a byte search and validates once as json. One JSON document of all the
 * events, taken apart by json_to_recordset, cost 5 µs an event more (a snapshot's insert of
 * 5,000: 38-44 ms against 12), and a text[] of them is escaped by pg and parsed by array_in.
 */
function toParams(appends: readonly StreamAppend[]): unknown[] {
  const streamIds: string[] = [];
  const kinds: string[] = [];
  const expected: (string | null)[] = [];
  const ordinals: number[] = [];
  const indexes: number[] = [];
  const types: string[] = [];
  const data: string[] = [];
  const metadata: string[] = [];
  appends.forEach((append, k) => {
    streamIds.push(append.streamId);
    const rev = append.expectedRevision;
    kinds.push(typeof rev === 'bigint' ? 'revision' : rev);
    expected.push(typeof rev === 'bigint' ? rev.toString() : null);
    try {
      append.events.forEach((event, j) => {
        ordinals.push(k + 1);
        indexes.push(j + 1);
        types.push(event.type);
        // Stored as given: big integers travel as strings inside the data, never as numbers.
        data.push(event.data === undefined ? 'null' : JSON.stringify(event.data));
        metadata.push(event.metadata == null ? '{}' : JSON.stringify(event.metadata));
      });
    } catch (error) {
      // A bigint or a cycle in the data: named, so that the others of a batch go on without it
      // (appendManyIsolating).
      throw new UnstorableData(append.streamId, `stream ${append.streamId}: event data cannot be written as JSON: ${(error as Error).message}`, { cause: error });
    }
  });
  const dataText = data.join('\n');
  const metadataText = metadata.join('\n');
  // The log's json column would take U+0000 and unpaired surrogates, but the read models'
  // jsonb and text columns cannot hold them: refuse them here, naming the stream, so that
  // nothing enters the log that a projection would fail on. JSON.stringify writes both as
  // \u escapes (a paired surrogate goes out as itself), so the cheap test is on the texts;
  // it may also match an escaped backslash followed by "u0000", and the exact check then
  // clears it.
  if (SUSPECT_ESCAPE.test(dataText) || SUSPECT_ESCAPE.test(metadataText)) {
    for (const append of appends) {
      if (holdsUnstorableText(append.events)) {
        throw new UnstorableData(
          append.streamId,
          `stream ${append.streamId}: event data contains U+0000 or an unpaired UTF-16 surrogate, which PostgreSQL's jsonb and text cannot hold`,
        );
      }
    }
  }
  return [
    arrayLiteral(streamIds),
    arrayLiteral(kinds),
    arrayLiteral(expected),
    arrayLiteral(ordinals),
    arrayLiteral(indexes),
    arrayLiteral(types),
    dataText,
    metadataText,
  ];
}

const SUSPECT_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

function validate(appends: readonly StreamAppend[]): void {
  const seen = new Set<string>();
  for (const append of appends) {
    checkAppend(append);
    const { streamId } = append;
    if (hasUnstorableCharacters(streamId)) throw new UnstorableData(streamId, 'stream id contains U+0000 or an unpaired UTF-16 surrogate');
    // Twice in one batch would make the second check race the first within one statement.
    if (seen.has(streamId)) throw new TypeError(`stream ${streamId} appears twice in one batch`);
    seen.add(streamId);
  }
}

// ---------------------------------------------------------------------------
// Waking subscriptions

/** A wake-up that is not lost when it fires while nobody waits (e.g. during a read). */
class Wakeup {
  private pending = false;
  private release: (() => void) | undefined;
  /**
   * When it last fired (performance.now()). What a notification announces committed before it
   * fired, so any read sent since then shows it: the subscriptions it woke share such a read
   * instead of each sending its own (each got to run a little later than the last).
   */
  firedAt = Number.NEGATIVE_INFINITY;

  fire(): void {
    this.pending = true;
    this.firedAt = performance.now();
    this.release?.();
  }

  /** Whether it fired since the last wait; the next wait then waits for another fire. */
  take(): boolean {
    const fired = this.pending;
    this.pending = false;
    return fired;
  }

  /** Resolves true when fired, false when ms passed first. */
  wait(ms: number): Promise<boolean> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.release = undefined;
        resolve(false);
      }, ms);
      this.release = () => {
        clearTimeout(timer);
        this.release = undefined;
        this.pending = false;
        resolve(true);
      };
    });
  }
}

/**
 * One LISTEN connection per store, shared by its subscriptions, held only while
 * some subscription runs. When it breaks, subscriptions go on polling and it is
 * re-opened after a pause.
 */
class Notifier {
  private readonly listeners = new Set<() => void>();
  private client: pg.PoolClient | undefined;
  private connecting: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Whether notifications can arrive now (LISTEN is up). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  add(listener: () => void): () => void {
    this.listeners.add(listener);
    this.ensureListening();
    return () => {
      if (!this.listeners.delete(listener)) return;
      if (this.listeners.size === 0) this.drop();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.connecting;
    this.drop();
  }

  private ensureListening(): void {
    if (this.client || this.connecting || this.closed || this.listeners.size === 0) return;
    this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  private async connect(): Promise<void> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.pool.connect();
      const self = client;
      // An 'error' on a checked-out client with no listener would crash the process.
      self.on('error', () => this.lost(self));
      self.on('notification', () => this.wakeAll());
      await self.query(`listen ${EVENTS_CHANNEL}`);
    } catch {
      client?.release(true);
      this.retryLater();
      return;
    }
    if (this.closed || this.listeners.size === 0) {
      client.release(true);
      return;
    }
    this.client = client;
    this.wakeAll(); // notifications sent while nobody listened are lost: look now
  }

  private lost(client: pg.PoolClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.release(true);
    this.retryLater();
  }

  private retryLater(): void {
    if (this.closed || this.listeners.size === 0) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.ensureListening(), 1000);
    this.retryTimer.unref();
  }

  /** The connection is closed rather than pooled, so no LISTEN outlives us on a pooled connection. */
  private drop(): void {
    const client = this.client;
    this.client = undefined;
    client?.release(true);
  }

  private wakeAll(): void {
    for (const listener of this.listeners) listener();
  }
}
