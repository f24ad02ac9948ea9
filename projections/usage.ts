// Read model: one row per organization with its money (integer micro-USD) and counts.
import { ident, typeList, type LoggedEvent, type Projection } from './projection.ts';
import { isVideoEventType } from './video-events.ts';

interface UsageDelta {
  org_id: string;
  balance: number;
  total_charged: number;
  snapshots_charged: number;
  live_snapshots: number;
  live_cost: number;
  test_snapshots: number;
  active_live: number;
  active_test: number;
}

export const usageProjection: Projection = {
  name: 'usage',
  version: 1,
  tables: ['usage'],
  consumes: ['OrganizationOpened', 'FundsDeposited', 'UsageCharged', 'SnapshotRecorded', 'VideoTracked', 'VideoResumed', 'VideoPaused', 'VideoErrored', 'VideoCompleted', 'VideoCancelled'],
  ddl: (schema) => `
    CREATE TABLE IF NOT EXISTS ${ident(schema)}.usage (
      org_id text PRIMARY KEY,
      balance bigint NOT NULL DEFAULT 0,
      total_charged bigint NOT NULL DEFAULT 0,
      snapshots_charged bigint NOT NULL DEFAULT 0,
      live_snapshots bigint NOT NULL DEFAULT 0,
      live_cost bigint NOT NULL DEFAULT 0,
      test_snapshots bigint NOT NULL DEFAULT 0,
      active_live int NOT NULL DEFAULT 0,
      active_test int NOT NULL DEFAULT 0
    );`,

  // The page's deltas below, summed over the whole log at once. The video events (the bulk of
  // the log) are counted by organization, type and mode first: a hash aggregation into a few rows
  // a type, where summing the deltas of each event sorted millions of rows by organization.
  async replay(client, schema, log) {
    const moves = `CASE WHEN type IN ('VideoTracked', 'VideoResumed') THEN n WHEN type IN ('VideoPaused', 'VideoErrored', 'VideoCompleted', 'VideoCancelled') THEN -n ELSE 0 END`;
    await client.query(
      `INSERT INTO ${ident(schema)}.usage (org_id, balance, total_charged, snapshots_charged, live_snapshots, live_cost, test_snapshots, active_live, active_test)
       SELECT org_id, sum(balance), sum(total_charged), sum(snapshots_charged), sum(live_snapshots), sum(live_cost), sum(test_snapshots),
         sum(active_live), sum(active_test)
       FROM (
         SELECT org_id, 0 AS balance, 0 AS total_charged, 0 AS snapshots_charged,
           CASE WHEN type = 'SnapshotRecorded' AND mode = 'live' THEN n ELSE 0 END AS live_snapshots,
           CASE WHEN type = 'SnapshotRecorded' AND mode = 'live' THEN price ELSE 0 END AS live_cost,
           CASE WHEN type = 'SnapshotRecorded' AND mode IS DISTINCT FROM 'live' THEN n ELSE 0 END AS test_snapshots,
           CASE WHEN mode IS DISTINCT FROM 'test' THEN ${moves} ELSE 0 END AS active_live,
           CASE WHEN mode = 'test' THEN ${moves} ELSE 0 END AS active_test
         FROM (
           SELECT "orgId" AS org_id, type, mode, count(*) AS n, sum(price::bigint) AS price
           FROM ${log.videoEvents} WHERE type IN (${typeList(usageProjection.consumes.filter(isVideoEventType))})
             -- An ending counts only for a video that was monitoring; one that was not moves nothing.
             AND (type NOT IN ('VideoCompleted', 'VideoCancelled') OR "previousStatus" = 'monitoring')
           GROUP BY "orgId", type, mode
         ) AS counted
         UNION ALL
         SELECT d."orgId",
           CASE log.type WHEN 'FundsDeposited' THEN d.amount WHEN 'UsageCharged' THEN -d.amount ELSE 0 END,
           CASE log.type WHEN 'UsageCharged' THEN d.amount ELSE 0 END,
           CASE log.type WHEN 'UsageCharged' THEN d.snapshots ELSE 0 END,
           0, 0, 0, 0, 0
         FROM ${log.events}, json_to_record(log.data) AS d("orgId" text, amount bigint, snapshots bigint)
         WHERE log.type IN (${typeList(usageProjection.consumes.filter((type) => !isVideoEventType(type)))})
       ) AS deltas
       GROUP BY org_id`,
    );
  },

  async apply(client, schema, events) {
    const deltas = new Map<string, UsageDelta>();
    const delta = (orgId: string) =>
      deltas.get(orgId) ??
      deltas.set(orgId, { org_id: orgId, balance: 0, total_charged: 0, snapshots_charged: 0, live_snapshots: 0, live_cost: 0, test_snapshots: 0, active_live: 0, active_test: 0 }).get(orgId)!;
    // `active_videos` counts videos in `monitoring`: every move into or out of it.
    const active = (data: { orgId: string; mode: string }, by: number) => {
      const d = delta(data.orgId);
      if (data.mode === 'test') d.active_test += by;
      else d.active_live += by;
    };

    for (const event of events as LoggedEvent[]) {
      switch (event.type) {
        case 'OrganizationOpened':
          delta(event.data.orgId);
          break;
        case 'FundsDeposited':
          delta(event.data.orgId).balance += event.data.amount;
          break;
        case 'UsageCharged': {
          const d = delta(event.data.orgId);
          d.balance -= event.data.amount;
          d.total_charged += event.data.amount;
          d.snapshots_charged += event.data.snapshots;
          break;
        }
        case 'SnapshotRecorded': {
          const d = delta(event.data.orgId);
          if (event.data.mode === 'live') {
            d.live_snapshots += 1;
            d.live_cost += event.data.price;
          } else d.test_snapshots += 1;
          break;
        }
        case 'VideoTracked':
        case 'VideoResumed':
          active(event.data, 1);
          break;
        case 'VideoPaused':
        case 'VideoErrored':
          active(event.data, -1);
          break;
        case 'VideoCompleted':
        case 'VideoCancelled':
          if (event.data.previousStatus === 'monitoring') active(event.data, -1);
          break;
      }
    }
    if (deltas.size === 0) return;
    await client.query(
      `INSERT INTO ${ident(schema)}.usage AS u (org_id, balance, total_charged, snapshots_charged, live_snapshots, live_cost, test_snapshots, active_live, active_test)
       SELECT * FROM jsonb_to_recordset($1::jsonb) AS d(org_id text, balance bigint, total_charged bigint, snapshots_charged bigint,
         live_snapshots bigint, live_cost bigint, test_snapshots bigint, active_live int, active_test int)
       ON CONFLICT (org_id) DO UPDATE SET
         balance = u.balance + excluded.balance,
         total_charged = u.total_charged + excluded.total_charged,
         snapshots_charged = u.snapshots_charged + excluded.snapshots_charged,
         live_snapshots = u.live_snapshots + excluded.live_snapshots,
         live_cost = u.live_cost + excluded.live_cost,
         test_snapshots = u.test_snapshots + excluded.test_snapshots,
         active_live = u.active_live + excluded.active_live,
         active_test = u.active_test + excluded.active_test`,
      [JSON.stringify([...deltas.values()])],
    );
  },
};
