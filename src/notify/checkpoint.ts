// A reactor's checkpoint in the log (notify.checkpoint, webhooks.checkpoint: one row each).
import type { Pool } from 'pg';
import type { Position } from '../eventstore/port.ts';
import { prepared } from '../db/prepared.ts';

export type CheckpointTable = 'notify.checkpoint' | 'webhooks.checkpoint';

/**
 * How often a reactor caught up with the log reads it (SubscribeOptions.minReadIntervalMs).
 * Woken by every append, a reactor read the log as often as the projector, and each of its
 * pages cost reads of endpoints and alerts and a checkpoint's write: `npm run bench -- --only
 * http-track` answered 1,903-1,922 tracks/s so, 2,229-2,269 with a reactor reading at most
 * every 200 ms. Its e-mails and deliveries wait that much longer at most.
 */
export const REACTOR_READ_INTERVAL_MS = 200;

/** Where the reactor left off; null: from the start of the log. */
export async function readCheckpoint(db: Pick<Pool, 'query'>, table: CheckpointTable): Promise<Position | null> {
  const { rows } = await db.query<{ commit_position: string; prepare_position: string }>(`SELECT commit_position, prepare_position FROM ${table} WHERE id = 1`);
  return rows[0] ? { commit: BigInt(rows[0].commit_position), prepare: BigInt(rows[0].prepare_position) } : null;
}

/** Moves the checkpoint to `position`, never back: a slower second reactor (another process) must not rewind a faster one. */
export async function advanceCheckpoint(db: Pick<Pool, 'query'>, table: CheckpointTable, position: Position): Promise<void> {
  await db.query({ ...ADVANCE[table], values: [position.commit.toString(), position.prepare.toString()] });
}

const advance = (table: CheckpointTable) =>
  prepared(
    `INSERT INTO ${table} AS c (id, commit_position, prepare_position) VALUES (1, $1, $2)
     ON CONFLICT (id) DO UPDATE SET commit_position = excluded.commit_position, prepare_position = excluded.prepare_position
     WHERE (c.commit_position, c.prepare_position) < (excluded.commit_position, excluded.prepare_position)`,
  );

/** Made once, not on every page: a reactor moves its checkpoint after each one. */
const ADVANCE: Record<CheckpointTable, ReturnType<typeof prepared>> = {
  'notify.checkpoint': advance('notify.checkpoint'),
  'webhooks.checkpoint': advance('webhooks.checkpoint'),
};
