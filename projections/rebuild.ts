// Rebuild: replay the log into fresh read-model tables in a schema of their own while the
// live ones keep answering, then swap the fresh tables in, in one transaction. A rebuild
// that dies halfway resumes from its own checkpoints when started again.
import type { Pool } from 'pg';
import type { EventStore, Position } from '../src/eventstore/port.ts';
import type { Projection } from './projection.ts';
import { buildBeside, type ReplayOptions } from './runner.ts';
import { swapIn } from './swap.ts';
import { VersionMismatch, describeNewer, planVersions } from './versions.ts';

import { BuildLocked } from './runner.ts';

export { BuildLocked, VersionMismatch };

export interface RebuildOptions {
  projections: readonly Projection[];
  liveSchema: string;
  /** Where the fresh tables are built (and found again after a crash). */
  buildSchema?: string;
  batchSize?: number;
  onProgress?: (events: number, position: Position) => void;
  /** Read models made where the log lies (PostgreSQL: replay.ts): how many at once, and progress. */
  replay?: ReplayOptions;
  /** Told when a build of a newer version left in the build schema is dropped (runner.ts dropNewerBuild). */
  onDropped?: (reason: string) => void;
  /** Called once the log as it was at the start is built, before the swap. */
  onBuilt?: () => void | Promise<void>;
}

export interface RebuildResult {
  events: number;
  seconds: number;
}

export async function rebuildReadModels(store: EventStore, pool: Pool, options: RebuildOptions): Promise<RebuildResult> {
  const build = options.buildSchema ?? `${options.liveSchema}_rebuild`;
  // The swap would move the same tables twice and fail, the build thrown away.
  const twice = options.projections.filter((p, i) => options.projections.findIndex((q) => q.name === p.name) !== i);
  if (twice.length > 0) throw new Error(`refusing to rebuild: ${[...new Set(twice.map((p) => p.name))].join(', ')} named more than once`);
  const plan = await planVersions(pool, options.liveSchema, options.projections);
  if (plan.newer.length > 0) throw new VersionMismatch(`refusing to rebuild: ${describeNewer(plan.newer)}; run the rebuild of that version`);
  if (plan.upgrade.length > 0) {
    throw new VersionMismatch(
      `refusing to rebuild: ${plan.upgrade.map((p) => p.name).join(', ')} in the database are older than this code; the projector of this version moves them (start it)`,
    );
  }
  // The build's own lock (buildBeside's) ends with each build, before the swap: a second rebuild
  // let in there would build, swap and drop the schema the first one is about to swap in.
  const lock = await pool.connect();
  try {
    const { rows } = await lock.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [`vidtrack.rebuild.${build}`]);
    if (!rows[0]!.locked) throw new BuildLocked(build);
    try {
      return await buildAndSwap(store, pool, options, build);
    } finally {
      await lock.query(`SELECT pg_advisory_unlock(hashtext($1))`, [`vidtrack.rebuild.${build}`]);
    }
  } finally {
    lock.release();
  }
}

async function buildAndSwap(store: EventStore, pool: Pool, options: RebuildOptions, build: string): Promise<RebuildResult> {
  const started = performance.now();
  let events = 0;
  const { batchSize, replay } = options;
  await buildBeside(store, pool, options.projections, build, {
    batchSize,
    replay,
    onDropped: options.onDropped,
    onPage: (n, position) => {
      events += n;
      options.onProgress?.(events, position);
    },
  });
  const seconds = (performance.now() - started) / 1000;
  await options.onBuilt?.();
  // What was appended during the build, and projected live meanwhile, is built too before the
  // swap: a few events, on one connection, while the swap holds one and the live runner waits on another.
  const catchUp = () => buildBeside(store, pool, options.projections, build, { batchSize, connectionPerProjection: false });
  await swapIn(pool, build, options.liveSchema, options.projections, catchUp);
  return { events, seconds };
}
