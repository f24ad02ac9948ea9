// The swap that ends a rebuild (or a projector's move to a new version): fresh tables built in
// a schema of their own replace the live ones, with their checkpoints, versions and parked
// events, in one transaction. The live tables are moved aside and dropped only once the fresh
// ones are in: no reader ever finds a read model missing.
import type { Pool } from 'pg';
import { withTransaction } from '../src/db/pool.ts';
import { comparePositions, type Position } from '../src/eventstore/port.ts';
import { readCheckpoints } from './checkpoints.ts';
import { ident, type Projection } from './projection.ts';
import { VersionMismatch, bookkeepingDdl } from './versions.ts';

/** Named, not `*`: two versions' tables may hold their columns in another order. */
const PARKED_COLUMNS = 'event_id, projection, commit_position, prepare_position, stream_id, revision, type, error, parked_at';

/**
 * Locking the live checkpoints first waits for the live runner's batch in progress, and holds
 * its next one; that batch finds checkpoints it did not write and starts again from them.
 *
 * `catchUp` brings the build to the log's head again. It is called, with the live checkpoints
 * held, when the live runner has applied events the build has not (appended while it was built):
 * swapped in without them, those events would be missing from the read models until some later
 * event made the live runner look at its checkpoints again, on a quiet log never.
 */
export async function swapIn(pool: Pool, build: string, live: string, projections: readonly Projection[], catchUp?: () => Promise<void>): Promise<void> {
  const [from, to, retired] = [ident(build), ident(live), ident(`${live}_retired`)];
  const names = projections.map((p) => p.name);
  await withTransaction(pool, async (client) => {
    await client.query(bookkeepingDdl(live));
    const held = await readCheckpoints(client, live, names, true);
    // A rebuild checks versions when it starts; a projector of a newer version may have moved
    // the live tables since (a deploy during the rebuild). Swapping the older build over them
    // would undo that and leave the newer projector failing on tables it does not know. Read
    // with the checkpoints held: that projector's swap holds them too, so one begun before this
    // one has committed by now, and one begun after waits for it.
    // (A projector's move to its version swaps in a build newer than the live tables: let through.)
    const { rows: newer } = await client.query<{ projection: string; live: number; built: number }>(
      `SELECT projection, l.version AS live, b.version AS built FROM ${to}.projection_versions l JOIN ${from}.projection_versions b USING (projection)
       WHERE projection = ANY($1::text[]) AND l.version > b.version`,
      [names],
    );
    if (newer.length > 0) {
      const which = newer.map((r) => `${r.projection} is at version ${r.live} in ${live}, the build in ${build} has ${r.built}`).join('; ');
      throw new VersionMismatch(`refusing to swap in: ${which} (a newer projector moved it meanwhile); nothing was swapped in: rebuild with the newer version`);
    }
    if (catchUp && isBehind(await readCheckpoints(client, build, names), held)) {
      await catchUp();
      if (isBehind(await readCheckpoints(client, build, names), held)) throw new Error(`the build in ${build} did not reach the live read models' checkpoints`);
    }
    await client.query(`DROP SCHEMA IF EXISTS ${retired} CASCADE; CREATE SCHEMA ${retired}`);
    for (const table of projections.flatMap((p) => p.tables)) {
      await client.query(`ALTER TABLE IF EXISTS ${to}.${ident(table)} SET SCHEMA ${retired}`);
      await client.query(`ALTER TABLE ${from}.${ident(table)} SET SCHEMA ${to}`);
    }
    // A projection the build never reached (an empty log) has no checkpoint there: nor may it keep
    // the old one. Its count of retries goes on, one more: fresh tables at the live position are
    // a change the API's kept answers must see (src/api/read-cache.ts keys them on the two).
    const { rows: counted } = await client.query<{ projection: string; retries: string }>(
      `DELETE FROM ${to}.checkpoints WHERE projection = ANY($1::text[]) RETURNING projection, retries::text`,
      [names],
    );
    await client.query(
      `INSERT INTO ${to}.checkpoints (projection, commit_position, prepare_position, updated_at, retries)
       SELECT b.projection, b.commit_position, b.prepare_position, b.updated_at, coalesce(c.retries, 0) + 1
       FROM ${from}.checkpoints b LEFT JOIN unnest($2::text[], $3::bigint[]) AS c(projection, retries) USING (projection)
       WHERE b.projection = ANY($1::text[])`,
      [names, counted.map((r) => r.projection), counted.map((r) => r.retries)],
    );
    await client.query(
      `INSERT INTO ${to}.projection_versions (projection, version, ddl_hash)
       SELECT projection, version, ddl_hash FROM ${from}.projection_versions WHERE projection = ANY($1::text[])
       ON CONFLICT (projection) DO UPDATE SET version = excluded.version, ddl_hash = excluded.ddl_hash`,
      [names],
    );
    await client.query(`DELETE FROM ${to}.parked_events WHERE projection = ANY($1::text[])`, [names]);
    await client.query(
      `INSERT INTO ${to}.parked_events (${PARKED_COLUMNS}) SELECT ${PARKED_COLUMNS} FROM ${from}.parked_events WHERE projection = ANY($1::text[])`,
      [names],
    );
    await client.query(`DROP SCHEMA ${retired} CASCADE; DROP SCHEMA ${from} CASCADE`);
  });
}

/** Whether some projection's `build` checkpoint is short of its `live` one. */
function isBehind(build: Map<string, Position | null>, live: Map<string, Position | null>): boolean {
  return [...live].some(([name, position]) => {
    const built = build.get(name) ?? null;
    return position !== null && (built === null || comparePositions(built, position) < 0);
  });
}
