// Every row of every read-model table, and the checkpoints without their timestamps, in a stable
// order: what a rebuild and the live projector must agree on.
import type { Pool } from 'pg';
import { READ_SCHEMA, projections } from '../../projections/index.ts';

export async function readModelRows(pool: Pool): Promise<Record<string, unknown[]>> {
  const result: Record<string, unknown[]> = {};
  for (const table of projections.flatMap((p) => p.tables)) {
    const { rows } = await pool.query(`SELECT * FROM ${READ_SCHEMA}.${table} t ORDER BY t::text`);
    result[table] = rows;
  }
  const { rows } = await pool.query(`SELECT projection, commit_position, prepare_position FROM ${READ_SCHEMA}.checkpoints ORDER BY projection`);
  result.checkpoints = rows;
  return result;
}
