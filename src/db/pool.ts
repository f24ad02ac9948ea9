// One place that decides how the app talks to PostgreSQL. int8/bigint and
// numeric columns keep pg's default of arriving as strings: positions, money in
// micro-USD and view counts must never pass through a float.
import pg from 'pg';

export interface PoolOptions {
  /** Most connections held (default 10). */
  readonly max?: number;
  /** Shown in pg_stat_activity, so an operator can tell the roles apart. */
  readonly applicationName?: string;
  /** Server-side limit per statement in ms (default: none). */
  readonly statementTimeoutMs?: number;
  /** Called when an idle connection breaks (default: printed to stderr). */
  readonly onError?: (error: Error) => void;
  /**
   * Commits return before their WAL reaches the disk (default: they wait). Only for work a
   * crash may lose without harm: a lost commit must mean work done again, never work missed.
   */
  readonly asyncCommit?: boolean;
}

export function createPool(url: string, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'vidtrack',
    statement_timeout: options.statementTimeoutMs,
    idleTimeoutMillis: 30_000,
    // Fail fast rather than queue forever when the server is gone or the pool is exhausted.
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    // Every hot statement joins a batch (an unnest of a few thousand keys) to a large table by
    // its key, and that table is in memory. At the default random_page_cost of 4 the planner
    // prices those key lookups as disk seeks and hash-joins a sequential scan of the whole
    // table instead, once per batch: measured 230 ms against 74 ms for a page of 5,000 video
    // updates on 100,000 videos, and the gap grows with the table. 1.1 is the usual figure for
    // data in memory or on SSD; set per session, so the plans are the same on any server.
    options: `-c random_page_cost=1.1${options.asyncCommit ? ' -c synchronous_commit=off' : ''}`,
  });
  // Without a listener, an idle connection dropped by the server (restart,
  // pg_terminate_backend) would crash the process with an unhandled 'error'.
  const report = options.onError ?? ((error: Error) => console.error(`[pg pool] idle connection lost: ${error.message}`));
  pool.on('error', (error) => {
    // pool.end() resolves before its sockets close; a server stopped or a
    // database dropped right after cuts them, which is expected then.
    if (!pool.ending) report(error);
  });
  // pg-pool listens for errors only while a connection sits idle in the pool. One checked out
  // between two statements (inside a transaction, or held by its user across an await) that the
  // server cuts (a restart: FATAL 57P01) emits 'error' with no listener, which would take the
  // process down. Its user learns of it anyway: its next statement fails ("not queryable") and
  // the connection is discarded on release. So an error here needs no handling, only a listener.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  return pool;
}

/**
 * Runs fn inside BEGIN/COMMIT on one connection, rolling back if it throws. A
 * connection whose ROLLBACK fails is destroyed rather than handed to the next
 * caller in an unknown state.
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await fn(client);
    await client.query('commit');
    client.release();
    return result;
  } catch (error) {
    try {
      await client.query('rollback');
      client.release();
    } catch (rollbackError) {
      client.release(rollbackError as Error);
    }
    throw error;
  }
}
