// The projection runner: reads the log in global order as an rxjs stream of pages and
// applies each page to every read model in ONE transaction together with their checkpoints.
//
// One process at a time advances a schema's projections: the runner holds a session
// advisory lock on its own connection and writes every batch through that same connection,
// so if the connection dies the lock goes with it and no write of ours can follow; a
// standby process waiting for the lock takes over from the checkpoints. Failures (a
// database restart) are reported and the runner starts again by itself.
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { BehaviorSubject, Subscription, concatMap, filter, from, map } from 'rxjs';
import { withTransaction } from '../src/db/pool.ts';
import { comparePositions, type EventStore, type Position } from '../src/eventstore/port.ts';
import { checkpointsDdl, readCheckpoints, writeCheckpoints } from './checkpoints.ts';
import { ident, type LoggedEvent, type Projection } from './projection.ts';

export interface RunnerOptions {
  schema: string;
  batchSize?: number;
  /** Called after each committed page (metrics, progress bars). */
  onPage?: (events: number, position: Position) => void;
  /** NOTIFY channel told of each committed page, for read-your-writes in other processes. */
  notifyChannel?: string | null;
  /** Run even if another runner holds the schema (a rebuild into a schema of its own). */
  exclusive?: boolean;
}

const RETRY_MS = 1_000;

/** The stored checkpoint of a projection is not the one this runner wrote last. */
export class CheckpointMoved extends Error {
  constructor(readonly projection: string) {
    super(`the checkpoint of projection ${projection} moved (a rebuild was swapped in); starting again from it`);
  }
}

/**
 * Creates the read models' tables. A projection whose table definitions changed since its
 * tables were made (a new version of the code) loses its tables and checkpoint here, so the
 * runner rebuilds it from the log: read models are disposable, the log is the truth.
 */
export async function ensureReadModels(pool: Pool, schema: string, projections: readonly Projection[]): Promise<void> {
  const s = ident(schema);
  await withTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`vidtrack.read-models.${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(checkpointsDdl(schema));
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.projection_versions (projection text PRIMARY KEY, ddl_hash text NOT NULL)`);
    for (const p of projections) {
      const hash = createHash('sha256').update(p.ddl('schema')).digest('hex');
      const { rows } = await client.query<{ ddl_hash: string | null }>(
        `SELECT (SELECT ddl_hash FROM ${s}.projection_versions WHERE projection = $1) AS ddl_hash,
                EXISTS (SELECT FROM ${s}.checkpoints WHERE projection = $1) AS projected`,
        [p.name],
      );
      const { ddl_hash: known, projected } = rows[0] as { ddl_hash: string | null; projected: boolean };
      // Tables built by a version that recorded no hash count as changed too.
      if (known !== hash && (known !== null || projected)) {
        for (const table of p.tables) await client.query(`DROP TABLE IF EXISTS ${s}.${ident(table)} CASCADE`);
        await client.query(`DELETE FROM ${s}.checkpoints WHERE projection = $1`, [p.name]);
      }
      await client.query(p.ddl(schema));
      await client.query(
        `INSERT INTO ${s}.projection_versions (projection, ddl_hash) VALUES ($1, $2) ON CONFLICT (projection) DO UPDATE SET ddl_hash = excluded.ddl_hash`,
        [p.name, hash],
      );
    }
  });
}

export class ProjectionRunner {
  /** The position every projection of this runner has passed (null before the first event). */
  readonly position$ = new BehaviorSubject<Position | null>(null);
  /** True while this process holds the lock and projects (false on a standby). */
  active = false;
  private subscription: Subscription | null = null;
  private client: PoolClient | null = null;
  private onClientError: ((error: Error) => void) | null = null;
  private inFlight: Promise<void> = Promise.resolve();
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly projections: readonly Projection[],
    private readonly options: RunnerOptions,
  ) {}

  /**
   * Resolves once this runner projects, or once it knows it is a standby (another process
   * holds the lock; it keeps trying in the background). Errors go to `onError`.
   */
  async start(onError: (error: unknown) => void): Promise<void> {
    this.stopped = false;
    try {
      await this.run(onError);
    } catch (error) {
      this.failed(error, onError);
    }
  }

  private async run(onError: (error: unknown) => void): Promise<void> {
    const { schema } = this.options;
    await ensureReadModels(this.pool, schema, this.projections);
    this.client = await this.pool.connect();
    this.onClientError = (error: Error) => this.failed(error, onError);
    this.client.on('error', this.onClientError);
    const { rows } = await this.client.query<{ locked: boolean }>(`SELECT pg_try_advisory_lock(hashtext($1)) AS locked`, [`vidtrack.projector.${schema}`]);
    if (!rows[0]!.locked && this.options.exclusive !== false) {
      this.release();
      this.schedule(onError);
      return;
    }
    this.active = true;
    const names = this.projections.map((p) => p.name);
    const checkpoints = await readCheckpoints(this.client, schema, names);
    // Resume from the least advanced projection; the others skip what they already have.
    const known = [...checkpoints.values()];
    const start = known.some((c) => c === null) ? null : known.reduce((a, b) => (comparePositions(a!, b!) <= 0 ? a : b))!;
    if (start) this.position$.next(start);

    // A page that failed before a restart must not fail the new subscription's first `ready()`.
    this.inFlight = Promise.resolve();
    this.subscription = this.store
      .subscribeAll(start, { batchSize: this.options.batchSize ?? 5000, ready: () => this.inFlight })
      .pipe(
        filter((page) => page.length > 0),
        concatMap((page) => {
          this.inFlight = this.applyPage(page as LoggedEvent[], checkpoints);
          return from(this.inFlight).pipe(map(() => page[page.length - 1]!.position));
        }),
      )
      .subscribe({
        next: (position) => this.position$.next(position),
        error: (error) => this.failed(error, onError),
      });
  }

  private failed(error: unknown, onError: (error: unknown) => void): void {
    if (this.stopped) return;
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
      this.run(onError).catch((error) => this.failed(error, onError));
    }, RETRY_MS);
  }

  private release(broken = false): void {
    this.active = false;
    if (this.onClientError) this.client?.off('error', this.onClientError);
    // A client that failed is destroyed, not returned: its session (and lock) must end.
    this.client?.release(broken || undefined);
    this.client = null;
  }

  private async applyPage(page: LoggedEvent[], checkpoints: Map<string, Position | null>): Promise<void> {
    const { schema } = this.options;
    const client = this.client;
    if (!client) throw new Error('projection runner lost its connection');
    const last = page[page.length - 1]!.position;
    await client.query('BEGIN');
    try {
      // A rebuild may have swapped fresh tables in, with checkpoints of their own: then this
      // runner's copy is stale and it starts again from the ones in the database.
      const stored = await readCheckpoints(client, schema, this.projections.map((p) => p.name), true);
      for (const [name, position] of stored) {
        const mine = checkpoints.get(name) ?? null;
        if ((position === null) !== (mine === null) || (position && mine && comparePositions(position, mine) !== 0)) {
          throw new CheckpointMoved(name);
        }
      }
      const advanced: string[] = [];
      for (const projection of this.projections) {
        const checkpoint = checkpoints.get(projection.name) ?? null;
        const events = checkpoint ? page.filter((e) => comparePositions(e.position, checkpoint) > 0) : page;
        if (events.length === 0) continue;
        await projection.apply(client, schema, events);
        advanced.push(projection.name);
      }
      if (advanced.length > 0) await writeCheckpoints(client, schema, advanced, last);
      if (this.options.notifyChannel) await client.query(`SELECT pg_notify($1, $2)`, [this.options.notifyChannel, `${last.commit}/${last.prepare}`]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    for (const projection of this.projections) {
      const checkpoint = checkpoints.get(projection.name) ?? null;
      if (!checkpoint || comparePositions(last, checkpoint) > 0) checkpoints.set(projection.name, last);
    }
    this.options.onPage?.(page.length, last);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.subscription?.unsubscribe();
    this.subscription = null;
    await this.inFlight.catch(() => undefined);
    if (this.client) {
      await this.client.query(`SELECT pg_advisory_unlock_all()`).catch(() => undefined);
      this.release();
    }
  }
}
