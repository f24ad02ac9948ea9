// The projection runner: reads the log in global order as an rxjs stream of pages and
// applies each page to every read model in ONE transaction together with their checkpoints
// (a build beside the live tables: one transaction per read model, each on its own connection).
//
// One process at a time advances a schema's projections: the runner holds a session
// advisory lock on its own connection and writes every batch through that same connection,
// so if the connection dies the lock goes with it and no write of ours can follow; a
// standby process waiting for the lock takes over from the checkpoints. Failures (a
// database restart) are reported and the runner starts again by itself.
//
// The runner holding the lock is the one owner of the read-model tables (versions.ts): it
// creates them in a fresh schema and moves an older version to its own by building beside and
// swapping. A runner whose code is older than the database stands by and touches nothing.
//
// An event a projection cannot apply is parked (parking.ts) and the page goes on without it:
// the page is tried whole first (the usual case costs nothing more), and only when that
// fails for a reason that is not transient is it applied again in halves inside savepoints
// until the events at fault are found. A stream with an event parked for a projection has its
// later events parked behind it for that projection, untried, whether parked on an earlier page
// (the streams with parked events are read in the round trip of each page's BEGIN) or earlier
// in the same page: a projection applies each stream's events in order, or not yet.
import os from 'node:os';
import type { Pool, PoolClient } from 'pg';
import { BehaviorSubject, Subject, Subscription, concatMap, filter, firstValueFrom, from, map, merge, mergeMap, tap, throwError } from 'rxjs';
import { withTransaction } from '../src/db/pool.ts';
import { comparePositions, type EventStore, type Position } from '../src/eventstore/port.ts';
import { beginWithCheckpoints, commitWithCheckpoints, readCheckpoints } from './checkpoints.ts';
import { describeParked, errorText, isTransient, parkBehind, parkEvents, parkedStreamsSql, waitingStreams, type ParkedEvent } from './parking.ts';
import { ident, type LoggedEvent, type Projection } from './projection.ts';
import { replayInDatabase } from './replay.ts';
import { swapIn } from './swap.ts';
import { VersionMismatch, bookkeepingDdl, createReadModels, describeNewer, planVersions } from './versions.ts';

export interface RunnerOptions {
  schema: string;
  batchSize?: number;
  /** Called after each committed page (metrics, progress bars). */
  onPage?: (events: number, position: Position) => void;
  /** NOTIFY channel told of each committed page, for read-your-writes in other processes. */
  notifyChannel?: string | null;
  /** Told of each event parked, once its page has committed (default: one JSON line on stderr). */
  onParked?: (parked: ParkedEvent) => void;
  /** Told why this runner stands by (another holds the lock, or the database is a newer version). */
  onStandby?: (reason: string) => void;
  /**
   * Each projection applies a page on a connection of its own, in a transaction of its own with
   * its own checkpoint, all at once, and the next page is read meanwhile: for a build beside the
   * live tables, which nothing reads until the swap, so the read models need not move together.
   * A rebuild's writes then run on as many PostgreSQL backends as there are read models instead
   * of one after another on one.
   */
  connectionPerProjection?: boolean;
  /**
   * A build up to `upTo`: read models still empty are made where the log lies, when it lies in
   * this pool's database (replay.ts), before the pages take over. Needs connectionPerProjection.
   */
  replay?: { upTo: Position | null } & ReplayOptions;
}

export interface ReplayOptions {
  /**
   * How many read models are made at once (default: this machine's cores). Each takes a core of
   * the database's machine, and more at once than it has only makes them slow each other down:
   * on 2 cores, 2 at once built the million-video log in 49 s, all 7 in 58 s.
   */
  connections?: number;
  /** Told of each read model made (rebuild progress). */
  onReplayed?: (projection: string, seconds: number) => void;
  /** Told as each read model's replay starts, its transaction open; the replay waits for what it returns (tests). */
  onReplaying?: (projection: string) => void | Promise<void>;
}

const RETRY_MS = 1_000;

/** The stored checkpoint of a projection is not the one this runner wrote last. */
export class CheckpointMoved extends Error {
  constructor(readonly projection: string) {
    super(`the checkpoint of projection ${projection} moved (a rebuild was swapped in); starting again from it`);
  }
}

/** Why a runner stands by when another process holds its schema's lock. */
const LOCK_HELD = 'another process projects these read models';

/** Another process holds the build schema's lock. */
export class BuildLocked extends Error {
  constructor(readonly schema: string) {
    super(`another rebuild into ${schema} is running`);
  }
}

/** A projection's apply failed: its cause decides between retrying the page and parking. */
class ApplyFailed extends Error {
  constructor(readonly cause: unknown) {
    super(String((cause as Error)?.message ?? cause));
  }
}

/** Every event of a page tried failed in one projection: not the events' fault, so none is parked. */
class EveryEventFailed extends Error {
  constructor(projection: string, readonly cause: unknown) {
    super(`every event of the page failed in projection ${projection}, so none is parked; retrying: ${errorText(cause)}`);
  }
}

function defaultOnParked(parked: ParkedEvent): void {
  process.stderr.write(`${JSON.stringify({ level: 'warn', msg: 'projection parked an event it cannot apply', ...describeParked(parked) })}\n`);
}

/**
 * Replays the log into `projections`' tables in `build` (found again after a crash) until the
 * head of the log as it was when called. Refused with BuildLocked while another build holds it.
 * A build of a newer version found there is dropped first (dropNewerBuild).
 */
export async function buildBeside(
  store: EventStore,
  pool: Pool,
  projections: readonly Projection[],
  build: string,
  options: {
    batchSize?: number;
    onPage?: (events: number, position: Position) => void;
    onParked?: (parked: ParkedEvent) => void;
    replay?: ReplayOptions;
    /** A connection for each read model (default true); one for a short catch-up, where connections may be few. */
    connectionPerProjection?: boolean;
    /** Told when a build of a newer version found in `build` was dropped (dropNewerBuild). */
    onDropped?: (reason: string) => void;
  } = {},
): Promise<void> {
  const dropped = await dropNewerBuild(pool, projections, build);
  if (dropped) options.onDropped?.(dropped);
  const target = await store.headPosition();
  const failures = new Subject<unknown>();
  const runner = new ProjectionRunner(store, pool, projections, {
    schema: build,
    batchSize: options.batchSize ?? 10_000,
    onPage: options.onPage,
    onParked: options.onParked,
    connectionPerProjection: options.connectionPerProjection ?? true,
    replay: { ...options.replay, upTo: target },
  });
  let firstError: unknown = null;
  await runner.start((error) => {
    firstError ??= error;
    failures.next(error);
  });
  try {
    // Not running: refused the lock (another build holds it), found a newer version there, or
    // failed to start (said as itself).
    if (!runner.active) {
      const reason = runner.standbyReason;
      throw firstError ?? (reason && reason !== LOCK_HELD ? new VersionMismatch(`cannot build in ${build}: ${reason}`) : new BuildLocked(build));
    }
    const caughtUp = runner.position$.pipe(filter((position) => !target || (position !== null && comparePositions(position, target) >= 0)));
    await firstValueFrom(merge(caughtUp, failures.pipe(mergeMap((error) => throwError(() => error)))));
  } finally {
    await runner.stop();
  }
}

/**
 * A build that a process of a newer version left in `build` (a rebuild or a move to a new
 * version, killed, then the deploy rolled back) cannot be resumed by this code: its runner
 * would stand by there for good. A build is scratch, so it is dropped and built afresh; the
 * newer version, deployed again, starts its own afresh too. Only while no runner builds there
 * (its lock is held for the drop); the callers' own locks (a rebuild's, the live projector's)
 * keep out a process between its build and its swap. Returns what was dropped, or null.
 */
export async function dropNewerBuild(pool: Pool, projections: readonly Projection[], build: string): Promise<string | null> {
  const { rows } = await pool.query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [`${ident(build)}.parked_events`]);
  if (!rows[0]!.found) return null;
  const { newer } = await planVersions(pool, build, projections);
  if (newer.length === 0) return null;
  const client = await pool.connect();
  try {
    const lock = `vidtrack.projector.${build}`;
    const { rows: locked } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [lock]);
    if (!locked[0]!.locked) throw new BuildLocked(build);
    try {
      await client.query(`DROP SCHEMA ${ident(build)} CASCADE`);
    } finally {
      await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [lock]);
    }
  } finally {
    client.release();
  }
  return `dropped the unfinished build of a newer version in ${build} (${describeNewer(newer)}); building afresh`;
}

export class ProjectionRunner {
  /** The position every projection of this runner has passed (null before the first event). */
  readonly position$ = new BehaviorSubject<Position | null>(null);
  /** True while this process holds the lock and projects (false on a standby). */
  active = false;
  /** Why this runner stands by, while it does. */
  standbyReason: string | null = null;
  private subscription: Subscription | null = null;
  private client: PoolClient | null = null;
  /** With connectionPerProjection: the connections of the projections after the first (which uses `client`). */
  private laneClients: PoolClient[] = [];
  private onClientError: ((error: Error) => void) | null = null;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;
  /** The start or restart under way: stop() waits for it, so that none goes on after stop() returned. */
  private starting: Promise<void> = Promise.resolve();
  /**
   * Which run() is the current one: failed() and stop() move it on, so a run() waiting meanwhile
   * (on a build beside that takes minutes) finds out when its wait ends and goes no further:
   * its connection is gone, and `client` may already be the next run's.
   */
  private generation = 0;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly projections: readonly Projection[],
    private readonly options: RunnerOptions,
  ) {}

  /**
   * Resolves once this runner projects, or once it knows it is a standby (another process
   * holds the lock, or the database holds a newer version; it keeps trying in the
   * background). Errors go to `onError`.
   */
  async start(onError: (error: unknown) => void): Promise<void> {
    this.stopped = false;
    this.launch(onError);
    await this.starting;
  }

  private launch(onError: (error: unknown) => void): void {
    const generation = ++this.generation;
    // A run replaced meanwhile (mostly failing on the connection failed() let go, already reported)
    // must not fail the run that replaced it.
    this.starting = this.run(generation, onError).catch((error: unknown) => (generation === this.generation ? this.failed(error, onError) : undefined));
  }

  private async run(generation: number, onError: (error: unknown) => void): Promise<void> {
    const { schema } = this.options;
    // Checked after each wait: failed() or stop() came meanwhile. failed() has let go of this run's
    // connections already and stop() does once this run has returned, so the run only goes no further.
    const replaced = () => generation !== this.generation;
    const client = await this.pool.connect();
    if (replaced()) return client.release();
    this.client = client;
    this.onClientError = (error: Error) => this.failed(error, onError);
    client.on('error', this.onClientError);
    // An older version never takes the lock from a newer one that is waiting for it.
    const newer = await this.newerInDatabase(client);
    if (replaced()) return;
    if (newer) return this.standBy(onError);
    const { rows } = await client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [`vidtrack.projector.${schema}`]);
    if (replaced()) return;
    if (!rows[0]!.locked) {
      this.standbyReason = LOCK_HELD;
      return this.standBy(onError);
    }
    const prepared = await this.prepareTables(client, replaced);
    if (replaced()) return;
    if (!prepared) {
      await client.query(`SELECT pg_advisory_unlock(hashtext($1))`, [`vidtrack.projector.${schema}`]);
      if (replaced()) return;
      return this.standBy(onError);
    }
    if (this.options.connectionPerProjection) {
      for (let i = 1; i < this.projections.length; i++) {
        const lane = await this.pool.connect();
        if (replaced()) return lane.release();
        lane.on('error', this.onClientError);
        this.laneClients.push(lane);
      }
    }
    this.active = true;
    this.standbyReason = null;
    const names = this.projections.map((p) => p.name);
    const checkpoints = await readCheckpoints(client, schema, names);
    if (replaced()) return;
    if (this.options.replay?.upTo) await this.replay(this.options.replay.upTo, checkpoints);
    if (replaced()) return;
    // Resume from the least advanced projection; the others skip what they already have.
    const known = [...checkpoints.values()];
    const start = known.some((c) => c === null) ? null : known.reduce((a, b) => (comparePositions(a!, b!) <= 0 ? a : b))!;
    if (start) this.position$.next(start);

    // A page that failed before a restart must not fail the new subscription's first `ready()`.
    this.inFlight = Promise.resolve();
    // Pages read and not yet applied. A build reads the next page while one is applied (at most
    // one waits); live projection reads after each page, so what it reads is as fresh as can be.
    let unapplied = 0;
    const ahead = this.options.connectionPerProjection ? 1 : 0;
    const ready = async () => {
      while (unapplied > ahead) await this.inFlight.catch(() => undefined);
    };
    this.subscription = this.store
      .subscribeAll(start, { batchSize: this.options.batchSize ?? 5000, ready })
      .pipe(
        filter((page) => page.length > 0),
        tap(() => unapplied++),
        concatMap((page) => {
          this.inFlight = this.applyPage(page as LoggedEvent[], checkpoints).finally(() => unapplied--);
          return from(this.inFlight).pipe(map(() => page[page.length - 1]!.position));
        }),
      )
      .subscribe({
        next: (position) => this.position$.next(position),
        error: (error) => this.failed(error, onError),
      });
  }

  /** Builds the read models that have no checkpoint yet where the log lies, if it lies in this database. */
  private async replay(upTo: Position, checkpoints: Map<string, Position | null>): Promise<void> {
    const log = this.store.logInDatabase?.(this.pool);
    if (!log) return;
    const empty = this.projections.filter((projection) => checkpoints.get(projection.name) === null);
    if (empty.length === 0) return;
    const { connections = os.availableParallelism(), onReplayed, onReplaying } = this.options.replay ?? {};
    const clients = [this.client!, ...this.laneClients];
    const lanes = clients.slice(0, Math.max(1, Math.min(connections, empty.length)));
    const { built, events } = await replayInDatabase(log, lanes, empty, this.options.schema, upTo, { onReplayed, onReplaying, spares: clients.slice(lanes.length) });
    for (const name of built) checkpoints.set(name, upTo);
    // Progress in events only when the replay did the whole build: otherwise the pages count
    // every event again from the least advanced read model.
    if (built.length === this.projections.length) this.options.onPage?.(events ?? (await log.countUpTo(this.pool, upTo)), upTo);
  }

  private async newerInDatabase(client: PoolClient): Promise<boolean> {
    const { schema } = this.options;
    // Migrations make the live schema's bookkeeping; a build schema's is made here, once.
    const { rows } = await client.query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [`${ident(schema)}.parked_events`]);
    if (!rows[0]!.found) {
      await client.query(bookkeepingDdl(schema)).catch((error: { code?: string }) => {
        // Two runners making a fresh build schema at once: the loser finds it made.
        if (error.code !== '23505' && error.code !== '42P07') throw error;
      });
    }
    const { newer } = await planVersions(client, schema, this.projections);
    if (newer.length === 0) return false;
    this.standbyReason = `the database holds newer read models than this code (${describeNewer(newer)}): leaving them to the newer projector`;
    return true;
  }

  /**
   * With the lock held: creates the tables of a fresh schema and moves older versions to this
   * code's (built beside, swapped in). False when the database turned out newer meanwhile.
   * `replaced`: this run no longer holds the lock, so it must not swap (the next run resumes the build).
   */
  private async prepareTables(client: PoolClient, replaced: () => boolean): Promise<boolean> {
    const { schema } = this.options;
    const plan = await planVersions(client, schema, this.projections);
    if (plan.newer.length > 0) {
      this.standbyReason = `the database holds newer read models than this code (${describeNewer(plan.newer)}): leaving them to the newer projector`;
      return false;
    }
    if (plan.unversionedChange.length > 0) {
      throw new Error(`the tables of ${plan.unversionedChange.map((p) => p.name).join(', ')} changed but their version did not: raise the projection's version`);
    }
    if (plan.create.length > 0) await withTransaction(this.pool, (client) => createReadModels(client, schema, plan.create));
    if (plan.upgrade.length > 0) {
      // The live tables keep serving the older version meanwhile; the swap replaces them whole.
      const build = `${schema}_upgrade`;
      await buildBeside(this.store, this.pool, plan.upgrade, build, { onParked: this.options.onParked });
      if (replaced()) return true;
      await swapIn(this.pool, build, schema, plan.upgrade);
    }
    return true;
  }

  private standBy(onError: (error: unknown) => void): void {
    this.release();
    if (this.standbyReason) this.options.onStandby?.(this.standbyReason);
    this.schedule(onError);
  }

  private failed(error: unknown, onError: (error: unknown) => void): void {
    if (this.stopped) return;
    this.generation++;
    onError(error);
    this.subscription?.unsubscribe();
    this.subscription = null;
    this.release(true);
    this.schedule(onError);
  }

  private schedule(onError: (error: unknown) => void): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.launch(onError);
    }, RETRY_MS);
  }

  private release(broken = false): void {
    this.active = false;
    for (const client of [this.client, ...this.laneClients]) {
      if (!client) continue;
      if (this.onClientError) client.off('error', this.onClientError);
      // A client that failed is destroyed, not returned: its session (and lock) must end.
      client.release(broken || undefined);
    }
    this.client = null;
    this.laneClients = [];
  }

  private async applyPage(page: LoggedEvent[], checkpoints: Map<string, Position | null>): Promise<void> {
    const client = this.client;
    if (!client) throw new Error('projection runner lost its connection');
    let parked: ParkedEvent[];
    if (this.laneClients.length > 0) {
      const lanes = [client, ...this.laneClients];
      // Every lane ends before the page is judged: none is left writing on a connection released after a failure.
      const settled = await Promise.allSettled(this.projections.map((projection, i) => this.applyOn(lanes[i]!, [projection], page, checkpoints)));
      const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
      parked = settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
    } else {
      parked = await this.applyOn(client, this.projections, page, checkpoints);
    }
    const last = page[page.length - 1]!.position;
    for (const projection of this.projections) {
      const checkpoint = checkpoints.get(projection.name) ?? null;
      if (!checkpoint || comparePositions(last, checkpoint) > 0) checkpoints.set(projection.name, last);
    }
    for (const p of parked) (this.options.onParked ?? defaultOnParked)(p);
    this.options.onPage?.(page.length, last);
  }

  /** The page for `projections` on one connection: whole first, and only when that fails for good, isolating the events at fault. */
  private async applyOn(client: PoolClient, projections: readonly Projection[], page: LoggedEvent[], checkpoints: Map<string, Position | null>): Promise<ParkedEvent[]> {
    try {
      return await this.applyInTransaction(client, projections, page, checkpoints, false);
    } catch (error) {
      if (!(error instanceof ApplyFailed) || isTransient(error.cause)) throw error instanceof ApplyFailed ? error.cause : error;
      // Some event of the page cannot be applied: again, finding it.
      return this.applyInTransaction(client, projections, page, checkpoints, true);
    }
  }

  /** One transaction for the page and the checkpoints; `isolate`: park the events at fault. */
  private async applyInTransaction(
    client: PoolClient,
    projections: readonly Projection[],
    page: LoggedEvent[],
    checkpoints: Map<string, Position | null>,
    isolate: boolean,
  ): Promise<ParkedEvent[]> {
    const { schema } = this.options;
    const last = page[page.length - 1]!.position;
    const parked: ParkedEvent[] = [];
    try {
      // A rebuild may have swapped fresh tables in, with checkpoints of their own: then this
      // runner's copy is stale and it starts again from the ones in the database.
      const begun = await beginWithCheckpoints<{ projection: string; stream_id: string; event_id: string }>(
        client, schema, projections.map((p) => p.name), (names) => parkedStreamsSql(schema, names),
      );
      for (const [name, position] of begun.checkpoints) {
        const mine = checkpoints.get(name) ?? null;
        if ((position === null) !== (mine === null) || (position && mine && comparePositions(position, mine) !== 0)) {
          throw new CheckpointMoved(name);
        }
      }
      const waiting = waitingStreams(begun.also);
      const advanced: string[] = [];
      for (const projection of projections) {
        const checkpoint = checkpoints.get(projection.name) ?? null;
        const unapplied = checkpoint ? page.filter((e) => comparePositions(e.position, checkpoint) > 0) : page;
        if (unapplied.length === 0) continue;
        // Usually no stream waits behind a parked event: then `events` is `unapplied` itself.
        const streams = waiting.get(projection.name) ?? new Map<string, string>();
        const events = parkBehind(unapplied, projection.name, streams, parked);
        if (isolate) {
          const before = parked.length;
          await this.applyIsolating(client, projection, events, parked, streams);
          // Every event tried failing, and more than one, is not N bad events: it is something
          // else (a bug, a missing grant), retried as a whole rather than parking the log away.
          // (Events parked behind a failed one were not tried: they say nothing either way.)
          const failed = parked.slice(before).filter((p) => p.behind === undefined);
          if (failed.length > 1 && parked.length - before === events.length) throw new EveryEventFailed(projection.name, failed[0]!.error);
        } else if (events.length > 0) await projection.apply(client, schema, events).catch((error: unknown) => Promise.reject(new ApplyFailed(error)));
        advanced.push(projection.name);
      }
      await parkEvents(client, schema, parked);
      await commitWithCheckpoints(client, schema, advanced, last, this.options.notifyChannel ?? null);
      return parked;
    } catch (error) {
      // A connection that cannot even roll back is gone: whatever failed, it was not the event.
      const rolledBack = await client.query('ROLLBACK').then(() => true, () => false);
      if (!rolledBack && error instanceof ApplyFailed) throw error.cause;
      throw error;
    }
  }

  /**
   * Applies `events` inside a savepoint; when that fails for a reason that is not transient,
   * applies each half in turn the same way, in order, so every event but the ones at fault
   * (and those of their streams after them, parked behind them) is applied exactly as a whole
   * page would apply it. `waiting`: the projection's streams with a parked event, grown here.
   */
  private async applyIsolating(
    client: PoolClient,
    projection: Projection,
    unapplied: readonly LoggedEvent[],
    parked: ParkedEvent[],
    waiting: Map<string, string>,
  ): Promise<void> {
    // An event parked in an earlier part holds back the later events of its stream.
    const events = parkBehind(unapplied, projection.name, waiting, parked);
    if (events.length === 0) return;
    await client.query('SAVEPOINT apply_events');
    try {
      await projection.apply(client, this.options.schema, events);
      await client.query('RELEASE SAVEPOINT apply_events');
      return;
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT apply_events; RELEASE SAVEPOINT apply_events');
      if (isTransient(error)) throw error;
      if (events.length === 1) {
        parked.push({ event: events[0]!, projection: projection.name, error });
        waiting.set(events[0]!.streamId, events[0]!.id);
        return;
      }
    }
    const middle = Math.ceil(events.length / 2);
    await this.applyIsolating(client, projection, events.slice(0, middle), parked, waiting);
    await this.applyIsolating(client, projection, events.slice(middle), parked, waiting);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.generation++;
    if (this.retry) clearTimeout(this.retry);
    // Cleared, not only stopped: a start after this stop must be able to schedule its restarts.
    this.retry = null;
    await this.starting;
    this.subscription?.unsubscribe();
    this.subscription = null;
    await this.inFlight.catch(() => undefined);
    if (this.client) await this.client.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
    this.release();
  }
}
