// Several schedulers share the due work by organization: a scheduler leases the
// organizations it works on (claimed with FOR UPDATE SKIP LOCKED, so two schedulers never
// take the same one), and an organization's funds are only ever spent by its lease holder.
// A lease runs out by itself if its holder dies.
//
// Funds are read from the usage projection, which trails the log. So a lease row also keeps
// what a holder spent that the projection may not show yet, and it outlives the lease:
// `spent_*` is the position of the last append that spent the organization's money, and
// `in_flight` the snapshots ([stream, snapshot id]) of an append whose outcome is not known
// yet (set before the append, cleared after it). Whoever takes the lease next (another
// scheduler, or this one's next sweep) spends nothing of that organization until the
// projection has passed `spent_*`, and first finds out from the log which `in_flight`
// snapshots landed. A holder that crashes, or whose wait for the projection times out,
// therefore leaves nothing behind that a successor could count twice.
import type { Pool } from 'pg';
import type { Migration } from '../db/migrate.ts';
import type { Position } from '../eventstore/port.ts';

export const SCHEDULER_SCHEMA_DDL = `
  CREATE SCHEMA IF NOT EXISTS sched;
  CREATE TABLE IF NOT EXISTS sched.org_leases (
    org_id text PRIMARY KEY,
    holder text,
    leased_until timestamptz NOT NULL DEFAULT '-infinity'
  );`;

const SPENDING_DDL = `
  ALTER TABLE sched.org_leases
    ADD COLUMN IF NOT EXISTS spent_commit numeric,
    ADD COLUMN IF NOT EXISTS spent_prepare numeric,
    ADD COLUMN IF NOT EXISTS in_flight jsonb;`;

export const schedulerMigrations: readonly Migration[] = [
  { id: 'scheduler/001-leases', sql: SCHEDULER_SCHEMA_DDL },
  { id: 'scheduler/002-lease-spending', sql: SPENDING_DDL },
  {
    // A batch's marks run to kilobytes an organization, written and cleared around every append:
    // out of line uncompressed, as the webhook batches (pglz was 1.3% of the machine's CPU
    // collecting a million videos).
    id: 'scheduler/003-in-flight-uncompressed',
    sql: `ALTER TABLE sched.org_leases ALTER COLUMN in_flight SET STORAGE EXTERNAL;`,
  },
];

const LEASE_SECONDS = 60;

/**
 * The rows of organizations ($1) that `holder` ($2) holds, locked in one order. Two sweeps of
 * one holder may write the same rows at once, each in its own statement; rows locked in the
 * order each statement met them could make each wait for the other (a deadlock, which fails the
 * round). Locked in org order, one simply waits for the other.
 */
const LOCK_IN_ORDER = `SELECT org_id FROM sched.org_leases WHERE org_id = ANY($1::text[]) AND holder = $2 ORDER BY org_id FOR UPDATE`;

/** Snapshots of an append under way: [stream id, snapshot id]. */
export type InFlight = Array<[streamId: string, snapshotId: string]>;

export interface Lease {
  orgId: string;
  /** The last spending appended under any lease of this organization (null: none known). */
  spent: Position | null;
  /** An append whose outcome nobody recorded (its holder died or lost the database mid-append). */
  inFlight: InFlight | null;
}

/** Leases up to `max` of the given organizations that nobody else holds. */
export async function leaseOrganizations(pool: Pool, holder: string, orgIds: readonly string[], max: number): Promise<Lease[]> {
  if (orgIds.length === 0) return [];
  await pool.query(`INSERT INTO sched.org_leases (org_id) SELECT o FROM unnest($1::text[]) AS o ORDER BY o ON CONFLICT DO NOTHING`, [orgIds]);
  const { rows } = await pool.query<{ org_id: string; spent_commit: string | null; spent_prepare: string | null; in_flight: InFlight | null }>(
    `WITH free AS (
       SELECT org_id FROM sched.org_leases
       WHERE org_id = ANY($1::text[]) AND (leased_until < now() OR holder = $2)
       ORDER BY leased_until LIMIT $3 FOR UPDATE SKIP LOCKED)
     UPDATE sched.org_leases l SET holder = $2, leased_until = now() + make_interval(secs => $4)
     FROM free WHERE l.org_id = free.org_id
     RETURNING l.org_id, l.spent_commit::text, l.spent_prepare::text, l.in_flight`,
    [orgIds, holder, max, LEASE_SECONDS],
  );
  return rows.map((r) => ({
    orgId: r.org_id,
    spent: r.spent_commit === null ? null : { commit: BigInt(r.spent_commit), prepare: BigInt(r.spent_prepare!) },
    inFlight: r.in_flight,
  }));
}

/**
 * Renews the leases `holder` has had without a break: the organizations renewed. A lease that
 * ran out and was taken meanwhile (its holder changed, even if since released) is not taken
 * back here: its taker may have spent, and only a take (leaseOrganizations, then the spending
 * settled) reads that.
 */
export async function renewLeases(pool: Pool, holder: string, orgIds: readonly string[]): Promise<Set<string>> {
  if (orgIds.length === 0) return new Set();
  const { rows } = await pool.query<{ org_id: string }>(
    `WITH mine AS (${LOCK_IN_ORDER})
     UPDATE sched.org_leases l SET leased_until = now() + make_interval(secs => $3) FROM mine WHERE l.org_id = mine.org_id
     RETURNING l.org_id`,
    [orgIds, holder, LEASE_SECONDS],
  );
  return new Set(rows.map((r) => r.org_id));
}

export async function releaseOrganizations(pool: Pool, holder: string, orgIds: readonly string[]): Promise<void> {
  if (orgIds.length === 0) return;
  await pool.query(
    `WITH mine AS (${LOCK_IN_ORDER})
     UPDATE sched.org_leases l SET leased_until = '-infinity' FROM mine WHERE l.org_id = mine.org_id`,
    [orgIds, holder],
  );
}

/**
 * Written before an append that spends these organizations' money: its snapshots, per
 * organization. Returns the organizations marked: those `holder` still holds. One missing was
 * taken over by another scheduler after this lease ran out, and must not be spent from here.
 *
 * The marked leases are renewed for the append: a lease that ran out while the platforms were
 * asked could otherwise be taken during the append, and its taker, not finding the append in
 * the log yet, would clear the marks and spend the same money again.
 */
export async function markInFlight(pool: Pool, holder: string, pending: ReadonlyMap<string, InFlight>): Promise<Set<string>> {
  if (pending.size === 0) return new Set();
  const { rows } = await pool.query<{ org_id: string }>(
    `WITH mine AS (${LOCK_IN_ORDER})
     UPDATE sched.org_leases l SET in_flight = p.in_flight, leased_until = now() + make_interval(secs => $4)
     FROM mine JOIN unnest($1::text[], string_to_array($3, chr(10))::jsonb[]) AS p(org_id, in_flight) USING (org_id)
     WHERE l.org_id = mine.org_id
     RETURNING l.org_id`,
    // The marks as JSON documents a line apart (JSON.stringify writes no line break): a jsonb[]
    // would have pg escape every quote of kilobytes of marks, and the server unescape them.
    [[...pending.keys()], holder, Array.from(pending.values(), (marks) => JSON.stringify(marks)).join('\n'), LEASE_SECONDS],
  );
  return new Set(rows.map((r) => r.org_id));
}

/**
 * Written once an append's outcome is known: `spent` (null when nothing landed) becomes the
 * organizations' last spending if it is later than the one recorded, and nothing is in flight.
 * Only while `holder` still holds the lease: one that lost it left its `in_flight` to the next
 * holder, who reads the outcome from the log before spending.
 */
export async function recordSpent(pool: Pool, holder: string, orgIds: readonly string[], spent: Position | null): Promise<void> {
  if (orgIds.length === 0) return;
  await pool.query(
    `WITH mine AS (${LOCK_IN_ORDER})
     UPDATE sched.org_leases l SET in_flight = NULL,
       (spent_commit, spent_prepare) = (
         SELECT CASE WHEN $3::numeric IS NULL OR (l.spent_commit, l.spent_prepare) >= ($3::numeric, $4::numeric)
                     THEN l.spent_commit ELSE $3::numeric END,
                CASE WHEN $3::numeric IS NULL OR (l.spent_commit, l.spent_prepare) >= ($3::numeric, $4::numeric)
                     THEN l.spent_prepare ELSE $4::numeric END)
     FROM mine WHERE l.org_id = mine.org_id`,
    [orgIds, holder, spent?.commit.toString() ?? null, spent?.prepare.toString() ?? null],
  );
}
