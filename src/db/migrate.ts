// A deliberately small migration runner. Each layer owns its list (event store,
// projections, ...) and ids are namespaced by layer ("eventstore/001-events"), so
// every list can share the one public.schema_migrations table.
import { createHash } from 'node:crypto';
import type pg from 'pg';

export interface Migration {
  /** Unique across all layers; never renamed once shipped. */
  readonly id: string;
  /** Runs in one transaction with the bookkeeping row (so no CREATE INDEX CONCURRENTLY). */
  readonly sql: string;
}

/** Any constant: every process that migrates this database takes the same lock. */
const LOCK_KEY = 'vidtrack.schema_migrations';

/**
 * Applies, in order, the migrations of the list not yet recorded; returns their
 * ids. A session advisory lock serialises processes that start together: the
 * second waits, then finds the work done.
 */
export async function migrate(pool: pg.Pool, migrations: readonly Migration[]): Promise<string[]> {
  const ids = new Set<string>();
  for (const m of migrations) {
    if (ids.has(m.id)) throw new Error(`migration ${m.id} is listed twice`);
    ids.add(m.id);
  }

  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock(hashtextextended($1, 0))', [LOCK_KEY]);
    const applied = await applyPending(client, migrations);
    await client.query('select pg_advisory_unlock(hashtextextended($1, 0))', [LOCK_KEY]);
    client.release();
    return applied;
  } catch (error) {
    // Closing the connection releases the lock and any half-done transaction.
    client.release(error as Error);
    throw error;
  }
}

async function applyPending(client: pg.PoolClient, migrations: readonly Migration[]): Promise<string[]> {
  await client.query(`
    create table if not exists public.schema_migrations (
      id text primary key,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`);
  const done = new Map<string, string>();
  const rows = await client.query<{ id: string; checksum: string }>('select id, checksum from public.schema_migrations');
  for (const row of rows.rows) done.set(row.id, row.checksum);

  const applied: string[] = [];
  for (const m of migrations) {
    const checksum = createHash('sha256').update(m.sql).digest('hex');
    const recorded = done.get(m.id);
    if (recorded !== undefined) {
      // An edited migration would leave databases that ran the old text silently different.
      if (recorded !== checksum) throw new Error(`migration ${m.id} changed after it was applied: add a new migration instead`);
      continue;
    }
    await client.query('begin');
    try {
      await client.query(m.sql);
      await client.query('insert into public.schema_migrations (id, checksum) values ($1, $2)', [m.id, checksum]);
      await client.query('commit');
    } catch (error) {
      await client.query('rollback').catch(() => {});
      throw new Error(`migration ${m.id} failed: ${(error as Error).message}`, { cause: error });
    }
    applied.push(m.id);
  }
  return applied;
}
