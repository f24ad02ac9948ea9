// Each projection's checkpoint lives in the same schema as its tables and is written
// in the same transaction as its rows: a batch is applied exactly once, or not at all.
import type { Pool, PoolClient } from 'pg';
import type { Position } from '../src/eventstore/port.ts';
import { ident } from './projection.ts';

export function checkpointsDdl(schema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${ident(schema)}.checkpoints (
    projection text PRIMARY KEY,
    commit_position numeric,
    prepare_position numeric,
    updated_at timestamptz NOT NULL DEFAULT now()
  );`;
}

/** `lock`: inside a transaction, hold the rows until it ends (a rebuild's swap waits for it). */
export async function readCheckpoints(db: Pool | PoolClient, schema: string, names: readonly string[], lock = false): Promise<Map<string, Position | null>> {
  const { rows } = await db.query<{ projection: string; commit_position: string | null; prepare_position: string | null }>(
    `SELECT projection, commit_position, prepare_position FROM ${ident(schema)}.checkpoints WHERE projection = ANY($1::text[])${lock ? ' FOR UPDATE' : ''}`,
    [names],
  );
  const result = new Map<string, Position | null>(names.map((n) => [n, null]));
  for (const row of rows) {
    if (row.commit_position !== null && row.prepare_position !== null) {
      result.set(row.projection, { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) });
    }
  }
  return result;
}

export async function writeCheckpoints(client: PoolClient, schema: string, names: readonly string[], position: Position): Promise<void> {
  await client.query(
    `INSERT INTO ${ident(schema)}.checkpoints (projection, commit_position, prepare_position)
     SELECT unnest($1::text[]), $2::numeric, $3::numeric
     ON CONFLICT (projection) DO UPDATE SET commit_position = excluded.commit_position,
       prepare_position = excluded.prepare_position, updated_at = now()`,
    [names, position.commit.toString(), position.prepare.toString()],
  );
}
