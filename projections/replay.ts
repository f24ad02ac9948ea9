// A build beside the live tables, done where the log lies. When the log is a table of the read
// models' own database (the PostgreSQL store), a fresh read model is not fed the log page by
// page through this process: a projection with a `replay` makes its tables from the log in a
// few set-based statements, and one without reads only the event types it `consumes`. Each
// read model does so on its own connection in one transaction with its checkpoint, so a build
// killed halfway leaves each either whole or untouched.
//
// What a replay cannot do, the page path still does: a replay that fails for a reason that is
// not transient is rolled back and leaves its read model to the runner's pages, which park the
// events at fault (runner.ts).
import type { PoolClient } from 'pg';
import type { LogInDatabase, Position } from '../src/eventstore/port.ts';
import { writeCheckpoints } from './checkpoints.ts';
import { errorText, isTransient } from './parking.ts';
import type { Projection } from './projection.ts';

/** Events handed to `apply` at a time by a replay without SQL of its own. */
const PAGE_SIZE = 10_000;

/**
 * Builds each of `projections` (whose tables in `schema` are empty) from every event up to
 * `upTo`, the i-th on `lanes[i]`, all at once. Resolves to the names of those built; the others
 * are left to the page path, their checkpoints untouched.
 */
export async function replayInDatabase(
  log: LogInDatabase,
  lanes: readonly PoolClient[],
  projections: readonly Projection[],
  schema: string,
  upTo: Position,
  onReplayed?: (projection: string, seconds: number) => void,
): Promise<string[]> {
  const settled = await Promise.allSettled(
    projections.map(async (projection, i) => {
      const started = performance.now();
      const built = await replayOne(log, lanes[i]!, projection, schema, upTo);
      if (built) onReplayed?.(projection.name, (performance.now() - started) / 1000);
      return built ? projection.name : null;
    }),
  );
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  return settled.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
}

async function replayOne(log: LogInDatabase, client: PoolClient, projection: Projection, schema: string, upTo: Position): Promise<boolean> {
  await client.query('BEGIN');
  try {
    // The replays group and sort whole read models: room in memory spares them the disk.
    await client.query(`SET LOCAL work_mem = '256MB'`);
    if (projection.replay) await projection.replay(client, schema, log.eventsUpTo(upTo));
    else {
      for await (const page of log.readTypesUpTo(client, projection.consumes, upTo, PAGE_SIZE)) {
        await projection.apply(client, schema, page as Parameters<Projection['apply']>[2]);
      }
    }
    await writeCheckpoints(client, schema, [projection.name], upTo);
    await client.query('COMMIT');
    return true;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (isTransient(error)) throw error;
    process.stderr.write(
      `${JSON.stringify({ level: 'warn', msg: 'replay in the database failed; the read model is built page by page instead', projection: projection.name, error: errorText(error) })}\n`,
    );
    return false;
  }
}
