// Read-your-writes across processes: what the read models held when a request arrived.
//
// The API keeps answers (usage rows, video bodies, keys) as of a version of the read models.
// It used to take that version from its own watcher, which learns of the projector's commits
// by NOTIFY a moment after they happen (or, while its LISTEN connection is down, by polling
// every half second). A deposit made by the admin CLI is acknowledged once it is projected;
// a track that came right after could still be answered from a usage row kept before the
// deposit, because this process had not heard of the page yet: 402 with the old balance.
//
// So the version is read from the database after the request arrived: the projections'
// checkpoints, which commit with their rows, the count kept on them of the changes that need
// not move them (a retry of parked events, a rebuild's swap: each commits with its count), and
// the number of revoked keys (revocations only ever add to it). An answer kept at that
// version holds every write acknowledged before the request came; a key kept at that
// revocation count is still unrevoked.
//
// One read serves every request that arrived before it started: a request that finds a read
// already running waits for the next one (at most one more round trip), so under load the
// cost is one small query per round trip, not per request.
import type { Pool } from 'pg';
import { comparePositions, type Position } from '../eventstore/port.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';
import { prepared } from '../db/prepared.ts';

/** A version of the read models: their rows change only when it does. */
export interface ReadVersion {
  /** Every projection has passed this position. */
  readonly position: Position;
  /** Retries of parked events and swaps of rebuilt tables (projections/checkpoints.ts), all projections together. */
  readonly retries: number;
}

export interface ReadView {
  /** Null: some projection has not started. */
  readonly version: ReadVersion | null;
  /** Keys revoked so far: a key cached at this count cannot have been revoked since. */
  readonly revokedKeys: number;
}

const VIEW_SQL = prepared(`
  SELECT c.projection, c.commit_position::text, c.prepare_position::text, c.retries::float8 AS retries,
         (SELECT count(*) FROM ${READ_SCHEMA}.api_keys WHERE revoked)::int AS revoked_keys
    FROM (SELECT NULL) AS always_one_row
    LEFT JOIN ${READ_SCHEMA}.checkpoints c ON c.projection = ANY($1::text[])`);

interface ViewRow {
  projection: string | null;
  commit_position: string | null;
  prepare_position: string | null;
  retries: number | null;
  revoked_keys: number;
}

export class ReadBarrier {
  private running: Promise<ReadView> | null = null;
  private queued: Promise<ReadView> | null = null;
  private readonly names = projections.map((p) => p.name);

  constructor(
    private readonly pool: Pool,
    private readonly watcher: ProjectionWatcher,
  ) {}

  /** The read models' version as of a read that started after this call. */
  sync(): Promise<ReadView> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    // The read under way may have started before this request arrived: wait for the next.
    const queued = this.running.catch(() => undefined).then(() => {
      this.queued = null;
      return this.start();
    });
    this.queued = queued;
    return queued;
  }

  private start(): Promise<ReadView> {
    const read = this.read();
    this.running = read;
    const done = () => {
      if (this.running === read) this.running = null;
    };
    read.then(done, done);
    return read;
  }

  private async read(): Promise<ReadView> {
    const { rows } = await this.pool.query<ViewRow>({ ...VIEW_SQL, values: [this.names] });
    const found = rows.filter((r) => r.projection !== null && r.commit_position !== null && r.prepare_position !== null);
    let position: Position | null = null;
    let retries = 0;
    if (found.length === this.names.length) {
      for (const row of found) {
        const p = { commit: BigInt(row.commit_position!), prepare: BigInt(row.prepare_position!) };
        if (!position || comparePositions(p, position) < 0) position = p;
        retries += row.retries!;
      }
    }
    // The watcher may not have heard of these pages yet: everything that waits on it may go on.
    this.watcher.update(position);
    // The database's own position, never the watcher's: after a rebuild swapped in tables whose
    // checkpoints are behind what the watcher saw, an answer read now must not be kept as one
    // of a version the tables have not reached.
    return { version: position && { position, retries }, revokedKeys: rows[0]?.revoked_keys ?? 0 };
  }
}
