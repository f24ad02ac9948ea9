// Several schedulers share the due work by organization: a scheduler leases the
// organizations it works on (claimed with FOR UPDATE SKIP LOCKED, so two schedulers never
// take the same one), and an organization's funds are only ever spent by its lease holder.
// A lease runs out by itself if its holder dies.
import type { Pool } from 'pg';

export const SCHEDULER_SCHEMA_DDL = `
  CREATE SCHEMA IF NOT EXISTS sched;
  CREATE TABLE IF NOT EXISTS sched.org_leases (
    org_id text PRIMARY KEY,
    holder text,
    leased_until timestamptz NOT NULL DEFAULT '-infinity'
  );`;

const LEASE_SECONDS = 60;

/** Leases up to `max` of the given organizations that nobody else holds. */
export async function leaseOrganizations(pool: Pool, holder: string, orgIds: readonly string[], max: number): Promise<string[]> {
  if (orgIds.length === 0) return [];
  await pool.query(`INSERT INTO sched.org_leases (org_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, [orgIds]);
  const { rows } = await pool.query<{ org_id: string }>(
    `WITH free AS (
       SELECT org_id FROM sched.org_leases
       WHERE org_id = ANY($1::text[]) AND (leased_until < now() OR holder = $2)
       ORDER BY leased_until LIMIT $3 FOR UPDATE SKIP LOCKED)
     UPDATE sched.org_leases l SET holder = $2, leased_until = now() + make_interval(secs => $4)
     FROM free WHERE l.org_id = free.org_id RETURNING l.org_id`,
    [orgIds, holder, max, LEASE_SECONDS],
  );
  return rows.map((r) => r.org_id);
}

export async function releaseOrganizations(pool: Pool, holder: string, orgIds: readonly string[]): Promise<void> {
  if (orgIds.length === 0) return;
  await pool.query(`UPDATE sched.org_leases SET leased_until = '-infinity' WHERE org_id = ANY($1::text[]) AND holder = $2`, [orgIds, holder]);
}
