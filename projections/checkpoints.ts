// Each projection's checkpoint lives in the same schema as its tables and is written
// in the same transaction as its rows: a batch is applied exactly once, or not at all.
import type { Pool, PoolClient } from 'pg';
import type { Position } from '../src/eventstore/port.ts';
import { ident } from './projection.ts';

/**
 * `retries` counts the changes of rows that need not move the checkpoint: retries of parked
 * events (parking.ts) and the swaps of rebuilt tables (swap.ts). The API's view of the read
 * models includes it (src/api/read-barrier.ts).
 */
export function checkpointsDdl(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${ident(schema)}.checkpoints (
    projection text PRIMARY KEY,
    commit_position numeric,
    prepare_position numeric,
    updated_at timestamptz NOT NULL DEFAULT now(),
    retries bigint NOT NULL DEFAULT 0
  );`;
}

type CheckpointRow = { projection: string; commit_position: string | null; prepare_position: string | null };

const selectCheckpoints = (schema: string, names: string, lock: boolean) =>
  `SELECT projection, commit_position, prepare_position FROM ${ident(schema)}.checkpoints WHERE projection = ANY(${names}::text[])${lock ? ' FOR UPDATE' : ''}`;

/** `lock`: inside a transaction, hold the rows until it ends (a rebuild's swap waits for it). */
export async function readCheckpoints(db: Pool | PoolClient, schema: string, names: readonly string[], lock = false): Promise<Map<string, Position | null>> {
  const { rows } = await db.query<CheckpointRow>(selectCheckpoints(schema, '$1', lock), [names]);
  return checkpointsOf(names, rows);
}

// A live projector's page is a chain of round trips, and a track's answer waits for it
// (read-your-writes): the BEGIN goes with the checkpoints' read, and the checkpoints' write,
// the NOTIFY and the COMMIT go together, as simple queries (no parameters: the names are
// literals, the positions digits). Three round trips fewer a page.
//
// A page's COMMIT does not wait for the disk either: a read model is made from the log, whose
// appends do wait, and its checkpoint commits with its rows. A crash can lose only the last
// pages' commits (WAL is flushed in order, so never one without those before it): the
// projector then finds the checkpoint where it was and projects those pages again.

/**
 * BEGIN, and the checkpoints read and held until the transaction ends (a rebuild's swap waits
 * for it); `also`, a query of the caller's over the same names (an SQL text[]), is sent in the
 * same round trip, after the lock, and its rows returned.
 */
export async function beginWithCheckpoints<R = never>(
  client: PoolClient,
  schema: string,
  names: readonly string[],
  also?: (names: string) => string,
): Promise<{ checkpoints: Map<string, Position | null>; also: R[] }> {
  const array = textArray(client, names);
  const results = (await client.query(
    `BEGIN; SET LOCAL synchronous_commit = off; ${selectCheckpoints(schema, array, true)}${also ? `; ${also(array)}` : ''}`,
  )) as unknown as { rows: unknown[] }[];
  const checkpointRows = results[also ? results.length - 2 : results.length - 1]!.rows as CheckpointRow[];
  return { checkpoints: checkpointsOf(names, checkpointRows), also: also ? (results.at(-1)!.rows as R[]) : [] };
}

/** The checkpoints of `names` (none: left as they are) moved to `position`, `notify` told of it, and COMMIT. */
export async function commitWithCheckpoints(client: PoolClient, schema: string, names: readonly string[], position: Position, notify: string | null): Promise<void> {
  const statements: string[] = [];
  if (names.length > 0) statements.push(upsertCheckpoints(schema, textArray(client, names), `${position.commit}`, `${position.prepare}`));
  if (notify) statements.push(`SELECT pg_notify(${client.escapeLiteral(notify)}, '${position.commit}/${position.prepare}')`);
  statements.push('COMMIT');
  await client.query(statements.join('; '));
}

const textArray = (client: PoolClient, names: readonly string[]) => `ARRAY[${names.map((n) => client.escapeLiteral(n)).join(', ')}]`;

function checkpointsOf(names: readonly string[], rows: readonly CheckpointRow[]): Map<string, Position | null> {
  const result = new Map<string, Position | null>(names.map((n) => [n, null]));
  for (const row of rows) {
    if (row.commit_position !== null && row.prepare_position !== null) {
      result.set(row.projection, { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) });
    }
  }
  return result;
}

const upsertCheckpoints = (schema: string, names: string, commit: string, prepare: string) =>
  `INSERT INTO ${ident(schema)}.checkpoints (projection, commit_position, prepare_position)
     SELECT unnest(${names}::text[]), ${commit}::numeric, ${prepare}::numeric
     ON CONFLICT (projection) DO UPDATE SET commit_position = excluded.commit_position,
       prepare_position = excluded.prepare_position, updated_at = now()`;

export async function writeCheckpoints(client: PoolClient, schema: string, names: readonly string[], position: Position): Promise<void> {
  await client.query(upsertCheckpoints(schema, '$1', '$2', '$3'), [names, position.commit.toString(), position.prepare.toString()]);
}
