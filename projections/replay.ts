// A build beside the live tables, done where the log lies. When the log is a table of the read
// models' own database (the PostgreSQL store), a fresh read model is not fed the log page by
// page through this process: a projection with a `replay` makes its tables from the log in a
// few set-based statements (over the video events parsed once for all of them first:
// video-events.ts), and one without reads only the event types it `consumes`. Each read model
// does so in one transaction with its checkpoint, so a build killed halfway leaves each either
// whole or untouched.
//
// Those transactions are long (seconds to a minute each) and append no event: each is exempted
// from the log's horizon (LogInDatabase.exemptFromHorizon), so that the log's readers (the live
// projector, read-your-writes, the reactors) do not wait for it. So is the staging of the video
// events, and the copy of the rest of the log.
//
// What a replay cannot do, the page path still does: a replay that fails for a reason that is
// not transient is rolled back and leaves its read model to the runner's pages, which park the
// events at fault (runner.ts).
import type { PoolClient } from 'pg';
import { inExemptTransaction, type HorizonExemption, type LogInDatabase, type Position } from '../src/eventstore/port.ts';
import { writeCheckpoints } from './checkpoints.ts';
import { errorText, isTransient } from './parking.ts';
import { ident, type LoggedEvent, type Projection, type ReplaySource } from './projection.ts';
import { VIDEO_EVENT_TYPES, isVideoEventType, stageVideoEvents, stagedVideoEventTables, stagedVideoEvents } from './video-events.ts';

/** Events handed to `apply` at a time by a replay without SQL of its own. */
const PAGE_SIZE = 10_000;

/**
 * Parts of the log staged for each lane, taken by whichever lane is free: parts of equal
 * pages are not of equal work (seen: 11.1 s against 12.8 s for the two halves of a log whose
 * first half held the trackings), and every replay waits for the last part.
 */
const PARTS_PER_LANE = 4;

/**
 * Builds each of `projections` (whose tables in `schema` are empty) from every event up to
 * `upTo`, as many at once as there are `lanes` (connections). Resolves to the names of those
 * built (the others are left to the page path, their checkpoints untouched) and to how many
 * events there are up to `upTo`.
 */
export async function replayInDatabase(
  log: LogInDatabase,
  lanes: readonly PoolClient[],
  projections: readonly Projection[],
  schema: string,
  upTo: Position,
  options: {
    onReplayed?: (projection: string, seconds: number) => void;
    /** Connections beyond the lanes', which a lane goes on with while a read model it made commits. */
    spares?: readonly PoolClient[];
    /** Told as each read model's replay starts, its transaction open; the replay waits for what it returns (tests). */
    onReplaying?: (projection: string) => void | Promise<void>;
  } = {},
): Promise<{ built: string[]; events?: number }> {
  const idle = [...(options.spares ?? [])];
  const commits: Promise<unknown>[] = [];
  const staging = projections.some((p) => p.replay && p.consumes.some(isVideoEventType));
  const parts = lanes.length * PARTS_PER_LANE;
  try {
    const staged = staging ? await stage(log, lanes, schema, await log.partsUpTo(lanes[0]!, upTo, parts)) : undefined;
    if (staged === false) return { built: [] };
    // The rest of the log (a few events of organizations, keys, members...) copied once, on the
    // first lane while the others start, for the read models that read it: each read of it in
    // the log would scan every video event again.
    const rest = staging && !projections.every(readsOnlyVideoEvents) ? copyRest(lanes[0]!, log, schema, upTo) : Promise.resolve<Rest>({ log });
    rest.catch(() => undefined); // awaited by each read model that reads it
    // Those with a replay of their own carry the bulk of the log: first, so that the last to
    // finish is a short one.
    const queue = [...projections.filter((p) => p.replay), ...projections.filter((p) => !p.replay)];
    const built: string[] = [];
    // How many events: the staged and the copied ones, when there are both; else a count of the
    // log, on the first lane left without a read model to build (the others still replay, so it
    // costs them no core) and without parallel workers, which would take their cores.
    let events: number | undefined;
    let count: ((client: PoolClient) => Promise<void>) | undefined = async (client) => {
      const copied = await rest;
      if (staged !== undefined && copied.events !== undefined) {
        events = staged + copied.events;
        return;
      }
      await client.query('BEGIN');
      try {
        await client.query('SET LOCAL max_parallel_workers_per_gather = 0');
        events = await log.countUpTo(client, upTo);
      } finally {
        await client.query('COMMIT');
      }
    };
    const lane = async (first: PoolClient) => {
      let client = first;
      if (client === lanes[0]) await rest.catch(() => undefined);
      await takeTurns(queue, async (projection) => {
        const started = performance.now();
        const exemption = await replayOne(log, client, projection, schema, upTo, await source(client, projection), options.onReplaying);
        if (!exemption) return;
        const committing = client;
        const committed = commit(committing, projection, exemption).then((ok) => {
          if (!ok) return;
          built.push(projection.name);
          options.onReplayed?.(projection.name, (performance.now() - started) / 1000);
        });
        // A read model's commit waits for the disk to take its WAL, not for a core (seen: 0.3-1.8 s
        // for the snapshots): the lane goes on with the next one on a spare connection meanwhile.
        const spare = idle.shift();
        if (spare) {
          client = spare;
          const handedOff = committed.finally(() => idle.push(committing));
          handedOff.catch(() => undefined); // its failure is settled with the lanes'
          commits.push(handedOff);
        } else await committed;
      });
      const mine = count;
      count = undefined;
      await mine?.(client);
    };
    const source = async (client: PoolClient, projection: Projection): Promise<ReplaySource> => {
      const others = readsOnlyVideoEvents(projection) ? log : (await rest).log;
      return {
        events: others.eventsUpTo(upTo),
        videoEvents: stagedVideoEvents(schema, parts),
        pages: (types) => (types.some(isVideoEventType) ? log : others).readTypesUpTo(client, types, upTo, PAGE_SIZE) as AsyncIterable<LoggedEvent[]>,
      };
    };
    const settled: PromiseSettledResult<unknown>[] = await Promise.allSettled(lanes.map(lane));
    settled.push(...(await Promise.allSettled(commits)));
    const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) throw failure.reason;
    return { built, events };
  } finally {
    // Scratch, whatever happened (after a lost connection, the next build drops it). One
    // statement: each drop looks through every shared buffer for the tables' pages.
    if (staging) {
      const scratch = [...stagedVideoEventTables(schema, parts), restTable(schema)].join(', ');
      await lanes[0]!.query(`DROP TABLE IF EXISTS ${scratch}`).catch(() => undefined);
    }
  }
}

/**
 * The video events parsed once, the parts shared out among the lanes: how many there were, or
 * false when they cannot be parsed (then every read model goes page by page).
 */
async function stage(log: LogInDatabase, lanes: readonly PoolClient[], schema: string, parts: readonly string[]): Promise<number | false> {
  const queue = parts.map((log, part) => ({ log, part }));
  let staged = 0;
  const settled = await Promise.allSettled(
    lanes.map((client) =>
      takeTurns(queue, async (next) => {
        const events = await stageVideoEvents(client, schema, next.log, next.part, log);
        staged += events;
      }),
    ),
  );
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failure) return staged;
  if (isTransient(failure.reason)) throw failure.reason;
  warn('the video events cannot be parsed in the database; every read model is built page by page instead', { error: errorText(failure.reason) });
  return false;
}

/** A lane's share of `queue`, which the lanes take from in turn, each when it is free: after a failure no lane starts another item. */
async function takeTurns<T>(queue: T[], work: (item: T) => Promise<void>): Promise<void> {
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    await work(item).catch((error: unknown) => {
      queue.length = 0;
      throw error;
    });
  }
}

function readsOnlyVideoEvents(projection: Projection): boolean {
  return projection.consumes.every(isVideoEventType);
}

function restTable(schema: string): string {
  return `${ident(schema)}.replay_log_rest`;
}

/** The events of no video stream: a copy of them and how many, or the log itself. */
interface Rest {
  log: LogInDatabase;
  events?: number;
}

/** The events of no video stream, copied; the log itself when they cannot be. */
async function copyRest(client: PoolClient, log: LogInDatabase, schema: string, upTo: Position): Promise<Rest> {
  try {
    await client.query(`DROP TABLE IF EXISTS ${restTable(schema)}`);
    // In a transaction exempt from the horizon: the copy scans the whole log.
    return await inExemptTransaction(log, client, () => log.copyExcept(client, restTable(schema), VIDEO_EVENT_TYPES, upTo));
  } catch (error) {
    if (isTransient(error)) throw error;
    warn('the rest of the log cannot be copied; its read models read it in the log', { error: errorText(error) });
    return { log };
  }
}

function warn(msg: string, fields: Record<string, string>): void {
  process.stderr.write(`${JSON.stringify({ level: 'warn', msg, ...fields })}\n`);
}

/**
 * Makes `projection` with its checkpoint in a transaction left open for `commit`, exempt from the
 * log's horizon (the exemption, for `commit` to end); false when rolled back.
 */
async function replayOne(
  log: LogInDatabase,
  client: PoolClient,
  projection: Projection,
  schema: string,
  upTo: Position,
  source: ReplaySource,
  onReplaying?: (projection: string) => void | Promise<void>,
): Promise<HorizonExemption | false> {
  await client.query('BEGIN');
  let exemption: HorizonExemption | undefined;
  try {
    exemption = await log.exemptFromHorizon(client);
    await onReplaying?.(projection.name);
    // The replays group, sort and join whole read models: room in memory spares them the disk.
    // The planner cannot count what a JSON function returns and guesses one row for a grouping
    // by such a column: it then joins a million rows to a million by a nested loop (seen: a
    // replay of 4,000,000 events still running after minutes), so nested loops are priced out;
    // the calls of json_to_record per event, which have no other plan, keep theirs.
    await client.query(`SET LOCAL work_mem = '256MB'; SET LOCAL maintenance_work_mem = '256MB'; SET LOCAL enable_nestloop = off`);
    const indexes = await setIndexesAside(client, schema, projection.tables);
    if (projection.replay) await projection.replay(client, schema, source);
    else for await (const page of source.pages(projection.consumes)) await projection.apply(client, schema, page);
    for (const definition of indexes) await client.query(definition);
    await writeCheckpoints(client, schema, [projection.name], upTo);
    return exemption;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    await exemption?.end();
    return failed(error, projection);
  }
}

/** Commits the transaction replayOne left open, and ends its exemption. */
async function commit(client: PoolClient, projection: Projection, exemption: HorizonExemption): Promise<boolean> {
  try {
    try {
      await exemption.beforeCommit();
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    await client.query('COMMIT');
    return true;
  } catch (error) {
    return failed(error, projection);
  } finally {
    await exemption.end();
  }
}

/** A replay that failed for a reason that is not transient leaves its read model to the pages. */
function failed(error: unknown, projection: Projection): false {
  if (isTransient(error)) throw error;
  warn('replay in the database failed; the read model is built page by page instead', { projection: projection.name, error: errorText(error) });
  return false;
}

/**
 * Drops the keys, unique constraints and indexes of `tables` and returns the statements that
 * make them again: built once over the whole table, an index costs a fraction of one kept up to
 * date row by row. A replay therefore needs no ON CONFLICT: a duplicate (which the streams rule
 * out) fails the key's rebuild, and the read model is then built page by page.
 */
async function setIndexesAside(client: PoolClient, schema: string, tables: readonly string[]): Promise<string[]> {
  const { rows: constraints } = await client.query<{ drop: string; add: string }>(
    `SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', c.conrelid::regclass, c.conname) AS drop,
            format('ALTER TABLE %s ADD CONSTRAINT %I %s', c.conrelid::regclass, c.conname, pg_get_constraintdef(c.oid)) AS add
     FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = $1 AND t.relname = ANY($2::text[]) AND c.contype IN ('p', 'u')`,
    [schema, tables],
  );
  const { rows: indexes } = await client.query<{ drop: string; add: string }>(
    `SELECT format('DROP INDEX %s', i.indexrelid::regclass) AS drop, pg_get_indexdef(i.indexrelid) AS add
     FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = $1 AND t.relname = ANY($2::text[])
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`,
    [schema, tables],
  );
  for (const { drop } of [...indexes, ...constraints]) await client.query(drop);
  return [...constraints, ...indexes].map((r) => r.add);
}
