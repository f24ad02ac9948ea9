import type { PoolClient } from 'pg';
import type { DomainEvent, DomainEventType } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';

export type LoggedEvent = RecordedEvent<DomainEvent['type'], any> & DomainEvent;

/**
 * A read model: the tables it owns and how a batch of events changes them.
 * `schema` is a parameter so a rebuild can build fresh tables beside the live ones.
 * `apply` must be set-based: a constant number of statements per batch, whatever its size.
 */
export interface Projection {
  readonly name: string;
  /**
   * Raised by hand whenever the tables or what `apply` writes into them change. Only the
   * projector holding the lock moves the database to a new version (projections/versions.ts),
   * and a process whose version is older than the database's leaves the tables alone.
   */
  readonly version: number;
  /** DDL creating the projection's tables in `schema`, idempotent (IF NOT EXISTS). */
  ddl(schema: string): string;
  /** Tables it owns, for a rebuild's swap. */
  readonly tables: readonly string[];
  apply(client: PoolClient, schema: string, events: readonly LoggedEvent[]): Promise<void>;
  /**
   * Every event type `apply` reads: a rebuild whose log lies in the read models' database gives
   * `apply` only these (projections/replay.ts). A type left out here is missed by such a rebuild;
   * test/projections/consumes.test.ts holds every projection to its list.
   */
  readonly consumes: readonly DomainEventType[];
  /**
   * Optional: the tables `apply` would leave after every event of the log, made in SQL by a few
   * set-based statements over the log where it lies (projections/replay.ts), for read models fed
   * by the bulk of the log (each snapshot or each video), which reading out page by page would
   * cost far more. Without it a replay hands `apply` every page of `consumes`. The tables are
   * empty and have neither keys nor indexes while it runs (they are made again after it), so it
   * needs no ON CONFLICT.
   */
  replay?(client: PoolClient, schema: string, log: ReplaySource): Promise<void>;
}

/** The log up to the build's position, where it lies (EventStore.logInDatabase). */
export interface ReplaySource {
  /**
   * A FROM item named `log`: position, stream_id, revision (bigint: a stream's order), type, data
   * (json), for the events of `consumes` that are not video events (`videoEvents` has those). It
   * may hold no video events: for read models that read others, it is a copy of the rest of the log.
   */
  readonly events: string;
  /**
   * A FROM item named `video_events`: the events of the video streams' types parsed once for
   * every replay (video-events.ts), as stream_id, revision, type, metrics and metadata (json),
   * and each field of their data as text, by its name there ("videoId", "slot", ...).
   */
  readonly videoEvents: string;
  /** The events of `types`, in log order, as pages (for what is simpler applied by `apply`). */
  pages(types: readonly DomainEventType[]): AsyncIterable<LoggedEvent[]>;
}

/** Quotes an identifier we made ourselves (schema names); never user input. */
export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad identifier ${name}`);
  return `"${name}"`;
}

/** Event types as a list of SQL literals, for `IN (...)`: our own type names, never input. */
export function typeList(types: readonly string[]): string {
  if (!types.every((type) => /^[A-Za-z]+$/.test(type))) throw new Error(`not event types: ${types.join(', ')}`);
  return types.map((type) => `'${type}'`).join(', ');
}

export function ofType<T extends DomainEvent['type']>(events: readonly LoggedEvent[], ...types: T[]) {
  return events.filter((e) => (types as string[]).includes(e.type)) as Array<LoggedEvent & Extract<DomainEvent, { type: T }>>;
}
