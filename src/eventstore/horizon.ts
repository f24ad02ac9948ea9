// The PostgreSQL log's horizon, and the transactions exempt from it.
//
// Readers of the log read only the rows of transactions below the horizon (postgres.ts says
// why): the oldest transaction in progress in the reading statement's snapshot, or, when none
// is, the snapshot's xmax (the next transaction id). A transaction in progress can still commit
// rows below any later horizon; readers must not pass it. But a transaction that writes no event
// cannot, and a rebuild's replays (projections/replay.ts) are such transactions, each open for
// seconds to a minute: they register themselves in es.horizon_exempt, and readers step over
// them. A transaction in progress that is not registered (or whose registration has not
// committed when the reader's snapshot is taken) holds readers back as before.
//
// Both halves come from ONE snapshot value taken in the reading statement: the rows it sees in
// es.events, in es.horizon_exempt, and the transactions it counts as in progress are those of
// the same snapshot (pg_current_snapshot() is the statement's active snapshot, and the STABLE
// function es.log_horizon() runs in it). es.horizon_exempt is per database, like es.events:
// an exemption registered in one database exempts nothing from the readers of another.
import type { HorizonExemption, SqlClient } from './port.ts';

/**
 * The horizon, as a scalar SQL expression, computed once per statement (an InitPlan whatever
 * the plan, never a filter called for each row): rows with `transaction_id < HORIZON` are
 * readable. With no transaction exempt it is pg_snapshot_xmin(pg_current_snapshot()) exactly.
 * es.log_horizon() is made by the migration eventstore/006-horizon-exempt.
 */
export const HORIZON = '(SELECT es.log_horizon())';

/** An exempt transaction appended events: they are rolled back. */
export class ExemptTransactionAppended extends Error {}

/**
 * Exempts the transaction open on `client` from the horizon: readers of the log then no longer
 * wait for it. It must append NO event (beforeCommit checks). `registrar` runs statements in
 * autocommit on another connection (a pool), so that the registration commits while the
 * transaction stays open. A registration that fails leaves the transaction holding readers
 * back, as every transaction did before: correct, only slower for them.
 */
export async function exemptFromHorizon(client: SqlClient, registrar: SqlClient): Promise<HorizonExemption> {
  const { rows } = await client.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid');
  const xid = rows[0]!.xid;
  let registered = false;
  try {
    // Rows of transactions ended without their `end()` (a crash) are pruned here: every id below
    // the oldest in progress has ended.
    await registrar.query(
      `WITH pruned AS (DELETE FROM es.horizon_exempt WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot()))
       INSERT INTO es.horizon_exempt (transaction_id) VALUES ($1::xid8) ON CONFLICT DO NOTHING`,
      [xid],
    );
    registered = true;
  } catch (error) {
    process.stderr.write(
      `${JSON.stringify({ level: 'warn', msg: 'a long transaction could not be exempted from the log horizon: readers of the log wait for it', error: String((error as Error)?.message ?? error) })}\n`,
    );
  }
  let ended = false;
  return {
    transactionId: BigInt(xid),
    async beforeCommit() {
      const { rows } = await client.query<{ appended: boolean }>(
        'SELECT EXISTS (SELECT 1 FROM es.events WHERE transaction_id = pg_current_xact_id()) AS appended',
      );
      if (rows[0]!.appended) throw new ExemptTransactionAppended(`transaction ${xid} is exempt from the log horizon and must append no events`);
    },
    async end() {
      if (ended || !registered) return;
      ended = true;
      await registrar.query('DELETE FROM es.horizon_exempt WHERE transaction_id = $1::xid8', [xid]).catch(() => undefined);
    },
  };
}
