// Which version of each read model a database holds, and what the projector holding the lock
// must do about it. One owner for read-model tables: only that projector creates them (in a
// fresh database) or moves them to a newer version (by building beside and swapping, never by
// DROP). A process whose code is older than the database leaves them alone, so two versions
// running side by side during a deploy never drop each other's tables.
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { checkpointsDdl } from './checkpoints.ts';
import { parkedEventsDdl } from './parking.ts';
import { ident, type Projection } from './projection.ts';

/**
 * The bookkeeping beside a schema's read models: checkpoints, versions, parked events.
 * Idempotent; run by migrations for the live schema and by the runner for a build schema.
 */
export function bookkeepingDdl(schema: string): string {
  const s = ident(schema);
  return `CREATE SCHEMA IF NOT EXISTS ${s};
    ${checkpointsDdl(schema)}
    CREATE TABLE IF NOT EXISTS ${s}.projection_versions (projection text PRIMARY KEY, ddl_hash text NOT NULL);
    ALTER TABLE ${s}.projection_versions ADD COLUMN IF NOT EXISTS version int;
    ${parkedEventsDdl(schema)}`;
}

/** A safety check beside the version: tables that changed while the version did not. */
export function ddlHash(projection: Projection): string {
  return createHash('sha256').update(projection.ddl('schema')).digest('hex');
}

/** Read models of another version than this code (or than the build about to replace them): refused. */
export class VersionMismatch extends Error {}

export interface VersionPlan {
  /** No tables yet: the projector creates them in place (there is nothing to drop). */
  readonly create: Projection[];
  /** Stored version older than the code's: built beside the live tables and swapped in. */
  readonly upgrade: Projection[];
  /** Stored version newer than the code's: this process must not touch the tables. */
  readonly newer: Array<{ projection: Projection; stored: number }>;
  /** Same version, different tables: a code change that forgot to raise the version. */
  readonly unversionedChange: Projection[];
}

interface StoredVersion {
  projection: string;
  version: number | null;
  ddl_hash: string | null;
  projected: boolean;
}

/** Reads what the database holds; `schema`'s bookkeeping tables must exist (migrations). */
export async function planVersions(db: Pool | PoolClient, schema: string, projections: readonly Projection[]): Promise<VersionPlan> {
  const s = ident(schema);
  const { rows } = await db.query<StoredVersion>(
    `SELECT p.projection, v.version, v.ddl_hash, EXISTS (SELECT FROM ${s}.checkpoints c WHERE c.projection = p.projection) AS projected
     FROM unnest($1::text[]) AS p(projection) LEFT JOIN ${s}.projection_versions v USING (projection)`,
    [projections.map((p) => p.name)],
  );
  const stored = new Map(rows.map((r) => [r.projection, r]));
  const plan: VersionPlan = { create: [], upgrade: [], newer: [], unversionedChange: [] };
  for (const projection of projections) {
    const row = stored.get(projection.name)!;
    const sameTables = row.ddl_hash === ddlHash(projection);
    if (row.version === null) {
      // Nothing recorded: a fresh schema. Tables from before versions existed recorded only
      // their hash: the same hash means the same tables, anything else is rebuilt beside them.
      if (row.ddl_hash === null && !row.projected) plan.create.push(projection);
      else if (sameTables) plan.create.push(projection);
      else plan.upgrade.push(projection);
    } else if (row.version < projection.version) plan.upgrade.push(projection);
    else if (row.version > projection.version) plan.newer.push({ projection, stored: row.version });
    else if (!sameTables) plan.unversionedChange.push(projection);
  }
  return plan;
}

/** Creates missing tables (IF NOT EXISTS) and records the code's versions; inside the caller's transaction. */
export async function createReadModels(client: PoolClient, schema: string, projections: readonly Projection[]): Promise<void> {
  for (const projection of projections) {
    await client.query(projection.ddl(schema));
    await client.query(
      `INSERT INTO ${ident(schema)}.projection_versions (projection, version, ddl_hash) VALUES ($1, $2, $3)
       ON CONFLICT (projection) DO UPDATE SET version = excluded.version, ddl_hash = excluded.ddl_hash`,
      [projection.name, projection.version, ddlHash(projection)],
    );
  }
}

export function describeNewer(newer: VersionPlan['newer']): string {
  return newer.map(({ projection, stored }) => `${projection.name} is at version ${stored} in the database, this code has ${projection.version}`).join('; ');
}

/**
 * For readers (the API's health, the CLI): true once every read model exists at this code's
 * version or a newer one (whose tables it reads and leaves alone). Never creates anything.
 */
export async function readModelsReady(db: Pool | PoolClient, schema: string, projections: readonly Projection[]): Promise<boolean> {
  try {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM unnest($1::text[], $2::int[]) AS p(projection, version)
       JOIN ${ident(schema)}.projection_versions v USING (projection) WHERE v.version >= p.version`,
      [projections.map((p) => p.name), projections.map((p) => p.version)],
    );
    return rows[0]!.n === projections.length;
  } catch (error) {
    // 42P01: no bookkeeping table yet (migrations have not run): not ready.
    if ((error as { code?: string }).code === '42P01') return false;
    throw error;
  }
}
