// Rebuild: replay the log into fresh read-model tables in a schema of their own while the
// live ones keep answering, then swap the fresh tables in, in one transaction. A rebuild
// that dies halfway resumes from its own checkpoints when started again.
import type { Pool } from 'pg';
import { withTransaction } from '../src/db/pool.ts';
import { comparePositions, type EventStore, type Position } from '../src/eventstore/port.ts';
import { ident, type Projection } from './projection.ts';
import { ProjectionRunner, ensureReadModels } from './runner.ts';

export interface RebuildOptions {
  projections: readonly Projection[];
  liveSchema: string;
  /** Where the fresh tables are built (and found again after a crash). */
  buildSchema?: string;
  batchSize?: number;
  onProgress?: (events: number, position: Position) => void;
}

export interface RebuildResult {
  events: number;
  seconds: number;
}

export async function rebuildReadModels(store: EventStore, pool: Pool, options: RebuildOptions): Promise<RebuildResult> {
  const build = options.buildSchema ?? `${options.liveSchema}_rebuild`;
  await ensureReadModels(pool, build, options.projections);
  const target = await store.headPosition();
  const started = performance.now();
  let events = 0;
  const runner = new ProjectionRunner(store, pool, options.projections, {
    schema: build,
    batchSize: options.batchSize ?? 10_000,
    onPage: (n, position) => {
      events += n;
      options.onProgress?.(events, position);
    },
  });
  let failure: unknown = null;
  await runner.start((error) => (failure = error));
  if (!runner.active) throw new Error(`another rebuild into ${build} is running`);
  try {
    await new Promise<void>((resolve, reject) => {
      const subscription = runner.position$.subscribe((position) => {
        if (failure) reject(failure);
        else if (!target || (position && comparePositions(position, target) >= 0)) {
          subscription?.unsubscribe();
          resolve();
        }
      });
    });
  } finally {
    await runner.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  await swapIn(pool, build, options.liveSchema, options.projections);
  return { events, seconds };
}

/**
 * Moves the fresh tables and their checkpoints into the live schema in one transaction.
 * Locking the live checkpoints first waits for the live runner's batch in progress; its next
 * batch finds checkpoints it did not write and starts again from them.
 */
async function swapIn(pool: Pool, build: string, live: string, projections: readonly Projection[]): Promise<void> {
  const [from, to, retired] = [ident(build), ident(live), ident(`${live}_retired`)];
  const names = projections.map((p) => p.name);
  await withTransaction(pool, async (client) => {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${to}`);
    await client.query(`SELECT projection FROM ${to}.checkpoints WHERE projection = ANY($1::text[]) FOR UPDATE`, [names]);
    await client.query(`DROP SCHEMA IF EXISTS ${retired} CASCADE; CREATE SCHEMA ${retired}`);
    for (const table of projections.flatMap((p) => p.tables)) {
      await client.query(`ALTER TABLE IF EXISTS ${to}.${ident(table)} SET SCHEMA ${retired}`);
      await client.query(`ALTER TABLE ${from}.${ident(table)} SET SCHEMA ${to}`);
    }
    for (const table of ['checkpoints', 'projection_versions']) {
      const [key, columns] = table === 'checkpoints' ? ['projection', 'commit_position, prepare_position, updated_at'] : ['projection', 'ddl_hash'];
      await client.query(
        `INSERT INTO ${to}.${table} SELECT * FROM ${from}.${table} WHERE projection = ANY($1::text[])
         ON CONFLICT (${key}) DO UPDATE SET (${columns}) = (SELECT ${columns.split(', ').map((c) => `excluded.${c}`).join(', ')})`,
        [names],
      );
    }
    await client.query(`DROP SCHEMA ${retired} CASCADE; DROP SCHEMA ${from} CASCADE`);
  });
}
