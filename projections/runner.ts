// The projection runner: reads the log in global order as an rxjs stream of pages and
// applies each page to every read model in ONE transaction together with their checkpoints.
import type { Pool } from 'pg';
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
}

export async function ensureReadModels(pool: Pool, schema: string, projections: readonly Projection[]): Promise<void> {
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
  await pool.query(checkpointsDdl(schema));
  for (const p of projections) await pool.query(p.ddl(schema));
}

export class ProjectionRunner {
  /** The position every projection of this runner has passed (null before the first event). */
  readonly position$ = new BehaviorSubject<Position | null>(null);
  private subscription: Subscription | null = null;
  private inFlight: Promise<void> = Promise.resolve();
  private failure: ((error: unknown) => void) | null = null;

  constructor(
    private readonly store: EventStore,
    private readonly pool: Pool,
    private readonly projections: readonly Projection[],
    private readonly options: RunnerOptions,
  ) {}

  /** Starts from the checkpoints; resolves once started. Errors go to `onError`. */
  async start(onError: (error: unknown) => void): Promise<void> {
    const { schema } = this.options;
    await ensureReadModels(this.pool, schema, this.projections);
    const names = this.projections.map((p) => p.name);
    const checkpoints = await readCheckpoints(this.pool, schema, names);
    // Resume from the least advanced projection; the others skip what they already have.
    const known = [...checkpoints.values()];
    const from$ = known.some((c) => c === null) ? null : known.reduce((a, b) => (comparePositions(a!, b!) <= 0 ? a : b))!;
    if (from$ && known.every((c) => c && comparePositions(c, from$) === 0)) this.position$.next(from$);
    this.failure = onError;

    this.subscription = this.store
      .subscribeAll(from$, { batchSize: this.options.batchSize ?? 5000, ready: () => this.inFlight })
      .pipe(
        filter((page) => page.length > 0),
        concatMap((page) => {
          this.inFlight = this.applyPage(page as LoggedEvent[], checkpoints);
          return from(this.inFlight).pipe(map(() => page[page.length - 1]!.position));
        }),
      )
      .subscribe({
        next: (position) => this.position$.next(position),
        error: (error) => this.failure?.(error),
      });
  }

  private async applyPage(page: LoggedEvent[], checkpoints: Map<string, Position | null>): Promise<void> {
    const { schema } = this.options;
    const last = page[page.length - 1]!.position;
    await withTransaction(this.pool, async (client) => {
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
    });
    for (const projection of this.projections) {
      const checkpoint = checkpoints.get(projection.name) ?? null;
      if (!checkpoint || comparePositions(last, checkpoint) > 0) checkpoints.set(projection.name, last);
    }
    this.options.onPage?.(page.length, last);
  }

  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = null;
    await this.inFlight.catch(() => undefined);
  }
}
