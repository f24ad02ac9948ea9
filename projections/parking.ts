// The projector's policy for an event it cannot apply: the event is parked (a dead-letter row
// with the error, written in the same transaction that moves the checkpoint past it) and the
// read models go on. A transient failure (the connection, a database restarting, a
// serialization conflict) is not the event's fault: it is never parked, the page is retried.
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
 * each in a transaction of its own that removes its row once it applies. Each waits for the
 * projector's page in progress (the checkpoint row lock) so the two never interleave.
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
  for (const row of await listParked(pool, schema, eventId)) {
    const projection = byName.get(row.projection);
    if (!projection) {
      outcome.still_parked.push({ event_id: row.event_id, projection: row.projection, error: `no projection ${row.projection} in this version of the code` });
      continue;
    }
    const event = (await store.readStream(row.stream_id)).find((e) => e.id === row.event_id) as LoggedEvent | undefined;
    if (!event) {
      outcome.still_parked.push({ event_id: row.event_id, projection: row.projection, error: `event not found in stream ${row.stream_id}` });
      continue;
    }
    try {
      await withTransaction(pool, async (client) => {
        const s = ident(schema);
        await client.query(`SELECT FROM ${s}.checkpoints WHERE projection = $1 FOR UPDATE`, [projection.name]);
        const { rowCount } = await client.query(`DELETE FROM ${s}.parked_events WHERE event_id = $1 AND projection = $2`, [row.event_id, projection.name]);
        if (rowCount === 0) return; // retried by someone else meanwhile
        await projection.apply(client, schema, [event]);
      });
      outcome.applied.push({ event_id: row.event_id, projection: row.projection });
    } catch (error) {
      if (isTransient(error)) throw error;
      await pool.query(`UPDATE ${ident(schema)}.parked_events SET error = $3 WHERE event_id = $1 AND projection = $2`, [row.event_id, row.projection, errorText(error)]);
      outcome.still_parked.push({ event_id: row.event_id, projection: row.projection, error: errorText(error) });
    }
  }
  return outcome;
}

/** One log line's worth about a parked event. */
export function describeParked(parked: ParkedEvent): Record<string, string> {
  const { event, projection, error } = parked;
  return { eventId: event.id, position: formatPosition(event.position), streamId: event.streamId, type: event.type, projection, error: errorText(error) };
}
