// The projector's policy for an event it cannot apply: the event is parked (a dead-letter row
// with the error, written in the same transaction that moves the checkpoint past it) and the
// read models go on. A transient failure (the connection, a database restarting, a
// serialization conflict) is not the event's fault: it is never parked, the page is retried.
//
// A projection must apply the events of a stream in their order: one that changes a row an
// earlier one made (a snapshot counted on its video, the revocation of a key) finds nothing to
// change, or is passed over by the revision guard, when applied before it. So once an event of
// a stream is parked for a projection, every later event of that stream is parked behind it for
// that projection, untried, its error naming the parked event it waits behind; other streams go
// on. A retry applies a stream's parked events in log order and stops at the first that fails
// again: those after it stay parked behind it.
//
// An operator lists parked events and, once the data or the projection is fixed, retries
// them through the projections (`npm run admin -- parked list|retry`).
import pg from 'pg';
import type { Pool, PoolClient } from 'pg';
import type { EventStore } from '../src/eventstore/port.ts';
import { formatPosition } from '../src/eventstore/port.ts';
import { withTransaction } from '../src/db/pool.ts';
import { cleanText } from '../src/domain/storable.ts';
import { ident, type LoggedEvent, type Projection } from './projection.ts';

export function parkedEventsDdl(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${ident(schema)}.parked_events (
    event_id text NOT NULL,
    projection text NOT NULL,
    commit_position numeric NOT NULL,
    prepare_position numeric NOT NULL,
    stream_id text NOT NULL,
    revision bigint NOT NULL,
    type text NOT NULL,
    error text NOT NULL,
    parked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, projection)
  );`;
}

export interface ParkedEvent {
  readonly event: LoggedEvent;
  readonly projection: string;
  readonly error: unknown;
  /** The parked event of its stream it waits behind, untried; absent when it failed itself. */
  readonly behind?: string;
}

const waitsBehind = (eventId: string) => `waits behind parked event ${eventId}`;

/** Per projection: each stream with a parked event, and the event its later events wait behind. */
export type WaitingStreams = Map<string, Map<string, string>>;

/**
 * The streams with parked events for the projections `names` (an SQL text[]), each with its
 * earliest parked event. The runner reads it with every page, in the round trip of its BEGIN:
 * the table is normally empty, and this is one row a stream however many of its events wait.
 */
export const parkedStreamsSql = (schema: string, names: string) =>
  `SELECT DISTINCT ON (projection, stream_id) projection, stream_id, event_id FROM ${ident(schema)}.parked_events
   WHERE projection = ANY(${names}::text[]) ORDER BY projection, stream_id, commit_position, prepare_position`;

export function waitingStreams(rows: ReadonlyArray<{ projection: string; stream_id: string; event_id: string }>): WaitingStreams {
  const waiting: WaitingStreams = new Map();
  for (const { projection, stream_id, event_id } of rows) {
    if (!waiting.has(projection)) waiting.set(projection, new Map());
    waiting.get(projection)!.set(stream_id, event_id);
  }
  return waiting;
}

/**
 * `events` but those of a stream in `waiting` (stream to parked event), which are added to
 * `parked` behind that stream's parked event for `projection`, untried.
 */
export function parkBehind(events: readonly LoggedEvent[], projection: string, waiting: ReadonlyMap<string, string>, parked: ParkedEvent[]): readonly LoggedEvent[] {
  if (waiting.size === 0) return events;
  return events.filter((event) => {
    const behind = waiting.get(event.streamId);
    if (behind === undefined) return true;
    parked.push({ event, projection, error: waitsBehind(behind), behind });
    return false;
  });
}

/** A parked event as the table and `parked list` show it. */
export interface ParkedRow {
  event_id: string;
  projection: string;
  position: string;
  stream_id: string;
  revision: string;
  type: string;
  error: string;
  parked_at: string;
}

/**
 * SQLSTATE classes that say nothing about the event: 08 connection, 25 transaction state,
 * 40001/40P01 conflicts with other transactions, 53 resources, 55 objects busy or locked (55P03,
 * 55006), 57 operator intervention (a cancelled statement, a server shutting down), 58 and XX
 * the server's own failures, and 42 (an undefined table or column, a syntax error): a bug or
 * a schema out of step with the code, which parking would turn into every event of the log
 * parked. These are retried, page after page, until they pass; they never park an event.
 */
const TRANSIENT_SQLSTATE = /^(08|25|42|53|55|57|58|XX)|^40001$|^40P01$/;

/**
 * True for a failure that is not the event's: another attempt, or a fixed deployment, gets
 * past it. A server's answer says which by its SQLSTATE; an error the server never answered
 * (a dropped socket) is transient. Anything else (a data exception, a TypeError on malformed
 * data) comes from the event and would fail again.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return TRANSIENT_SQLSTATE.test(error.code ?? '');
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // ECONNRESET, EPIPE, ...
  return /Connection terminated|not queryable|Client was closed/i.test(String((error as Error | null)?.message ?? ''));
}

/** The error as stored and shown: an error may quote the event's text, so it is cleaned as platform text is. */
export function errorText(error: unknown): string {
  const text = error instanceof pg.DatabaseError ? `${error.message} (SQLSTATE ${error.code})` : error instanceof Error ? error.message : String(error);
  return cleanText(text, 2_000);
}

/** Records parked events inside the caller's transaction (the one that moves the checkpoint). */
export async function parkEvents(client: PoolClient, schema: string, parked: readonly ParkedEvent[]): Promise<void> {
  if (parked.length === 0) return;
  const rows = parked.map(({ event, projection, error }) => ({
    event_id: event.id,
    projection,
    commit_position: event.position.commit.toString(),
    prepare_position: event.position.prepare.toString(),
    stream_id: event.streamId,
    revision: event.revision.toString(),
    type: event.type,
    error: errorText(error),
  }));
  await client.query(
    `INSERT INTO ${ident(schema)}.parked_events (event_id, projection, commit_position, prepare_position, stream_id, revision, type, error)
     SELECT event_id, projection, commit_position, prepare_position, stream_id, revision, type, error
     FROM jsonb_to_recordset($1::jsonb) AS r(event_id text, projection text, commit_position numeric, prepare_position numeric,
       stream_id text, revision bigint, type text, error text)
     ON CONFLICT (event_id, projection) DO UPDATE SET error = excluded.error, parked_at = now()`,
    [JSON.stringify(rows)],
  );
}

export async function listParked(db: Pool | PoolClient, schema: string, eventId?: string): Promise<ParkedRow[]> {
  const { rows } = await db.query<ParkedRow>(
    `SELECT event_id, projection, commit_position || '/' || prepare_position AS position, stream_id, revision::text, type, error,
       to_json(parked_at)#>>'{}' AS parked_at
     FROM ${ident(schema)}.parked_events WHERE $1::text IS NULL OR event_id = $1
     ORDER BY commit_position, prepare_position, projection`,
    [eventId ?? null],
  );
  return rows;
}

export interface RetryOutcome {
  applied: Array<{ event_id: string; projection: string }>;
  still_parked: Array<{ event_id: string; projection: string; error: string }>;
}

/**
 * Applies parked events again through `projections` (read back from the log through the port),
 * stream by stream: a stream's parked events for a projection in log order, in one transaction
 * that removes the rows of those that apply. The first that fails again keeps its row with the
 * new error, and the later ones stay parked behind it, untried. With `eventId`, its streams
 * only, from it on: an event with an earlier one of its stream still parked waits behind it.
 */
export async function retryParked(
  store: EventStore,
  pool: Pool,
  projections: readonly Projection[],
  schema: string,
  eventId?: string,
): Promise<RetryOutcome> {
  const outcome: RetryOutcome = { applied: [], still_parked: [] };
  const byName = new Map(projections.map((p) => [p.name, p]));
  const streams = new Map<string, ParkedRow[]>(); // each projection's streams, their rows in log order
  for (const row of await listParked(pool, schema)) {
    const key = JSON.stringify([row.projection, row.stream_id]);
    const rows = streams.get(key);
    if (rows) rows.push(row);
    else streams.set(key, [row]);
  }
  for (const rows of streams.values()) {
    if (eventId !== undefined && !rows.some((r) => r.event_id === eventId)) continue;
    const projection = byName.get(rows[0]!.projection);
    const { applied, still_parked } = projection
      ? await retryStream(store, pool, projection, schema, rows[0]!.stream_id, eventId)
      : { applied: [], still_parked: rows.map((r) => ({ event_id: r.event_id, projection: r.projection, error: `no projection ${r.projection} in this version of the code` })) };
    outcome.applied.push(...applied);
    outcome.still_parked.push(...still_parked);
  }
  return outcome;
}

async function parkedOfStream(db: Pool | PoolClient, schema: string, projection: string, streamId: string): Promise<Array<{ event_id: string; projection: string }>> {
  const { rows } = await db.query<{ event_id: string; projection: string }>(
    `SELECT event_id, projection FROM ${ident(schema)}.parked_events WHERE projection = $1 AND stream_id = $2 ORDER BY commit_position, prepare_position`,
    [projection, streamId],
  );
  return rows;
}

/**
 * One stream's parked events for `projection`, in log order, each in a savepoint. The stream's
 * rows are read again under the checkpoint row's lock, which the projector's pages hold too:
 * the two never interleave, and events the projector parked meanwhile are retried with them.
 * The lock is taken by counting the retry on the checkpoint row: a retry changes read-model
 * rows without moving the checkpoint, and the API keeps answers by the read models' version
 * (src/api/read-barrier.ts), which includes the count; it commits with the rows.
 */
async function retryStream(store: EventStore, pool: Pool, projection: Projection, schema: string, streamId: string, eventId?: string): Promise<RetryOutcome> {
  // The stream as the log holds it now, mended data included.
  const logged = new Map((await store.readStream(streamId)).map((e) => [e.id, e as LoggedEvent]));
  const s = ident(schema);
  return withTransaction(pool, async (client) => {
    const outcome: RetryOutcome = { applied: [], still_parked: [] };
    await client.query(`UPDATE ${s}.checkpoints SET retries = retries + 1 WHERE projection = $1`, [projection.name]);
    const rows = await parkedOfStream(client, schema, projection.name, streamId);
    const from = eventId === undefined ? 0 : rows.findIndex((r) => r.event_id === eventId);
    if (from === -1) return outcome; // retried by someone else meanwhile
    if (from > 0) {
      outcome.still_parked.push({ event_id: eventId!, projection: projection.name, error: waitsBehind(rows[0]!.event_id) });
      return outcome;
    }
    for (const [i, row] of rows.entries()) {
      const event = logged.get(row.event_id);
      const error = event ? await applyInSavepoint(client, projection, schema, event) : `event not found in stream ${streamId}`;
      if (error === null) {
        await client.query(`DELETE FROM ${s}.parked_events WHERE event_id = $1 AND projection = $2`, [row.event_id, projection.name]);
        outcome.applied.push(row);
        continue;
      }
      const later = rows.slice(i + 1);
      if (event) await client.query(`UPDATE ${s}.parked_events SET error = $3 WHERE event_id = $1 AND projection = $2`, [row.event_id, projection.name, error]);
      await client.query(`UPDATE ${s}.parked_events SET error = $3 WHERE event_id = ANY($1::text[]) AND projection = $2`, [later.map((r) => r.event_id), projection.name, waitsBehind(row.event_id)]);
      outcome.still_parked.push({ ...row, error }, ...later.map((r) => ({ ...r, error: waitsBehind(row.event_id) })));
      break;
    }
    return outcome;
  });
}

/** Null once `event` applied; the error's text when it fails for a reason of its own (a transient one is thrown). */
async function applyInSavepoint(client: PoolClient, projection: Projection, schema: string, event: LoggedEvent): Promise<string | null> {
  await client.query('SAVEPOINT retry_event');
  try {
    await projection.apply(client, schema, [event]);
    await client.query('RELEASE SAVEPOINT retry_event');
    return null;
  } catch (error) {
    if (isTransient(error)) throw error;
    await client.query('ROLLBACK TO SAVEPOINT retry_event; RELEASE SAVEPOINT retry_event');
    return errorText(error);
  }
}

/** One log line's worth about a parked event. */
export function describeParked(parked: ParkedEvent): Record<string, string> {
  const { event, projection, error } = parked;
  return { eventId: event.id, position: formatPosition(event.position), streamId: event.streamId, type: event.type, projection, error: errorText(error) };
}
