// Read model: each organization's metric alerts, for the API and the webhook reactor.
import { ident, ofType, type Projection } from './projection.ts';

// A deleted alert stays as a tombstone: the reactor may reach a snapshot recorded while the alert
// existed only after its deletion (a reactor behind, or on the same page), and the alert must
// fire for it; nor may an alert fire for a snapshot recorded before it was created. So each row
// holds the log positions of its creation and deletion. Tombstones are kept, one row per alert
// ever created (as the log keeps its events); every read for the API leaves them out.
export const alertsProjection: Projection = {
  name: 'alerts',
  // 2: the positions of creation and deletion; a deletion leaves a tombstone.
  version: 2,
  tables: ['metric_alerts'],
  consumes: ['MetricAlertCreated', 'MetricAlertDeleted'],
  ddl: (schema) => `
    CREATE TABLE IF NOT EXISTS ${ident(schema)}.metric_alerts (
      alert_id text PRIMARY KEY,
      org_id text NOT NULL,
      mode text NOT NULL,
      video_id text NOT NULL,
      metric text NOT NULL,
      condition jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      created_commit numeric NOT NULL,
      created_prepare numeric NOT NULL,
      deleted_commit numeric,
      deleted_prepare numeric
    );
    CREATE INDEX IF NOT EXISTS metric_alerts_org ON ${ident(schema)}.metric_alerts (org_id, mode, created_at);`,

  async apply(client, schema, events) {
    const s = ident(schema);
    // Positions as decimal strings: bigints do not go through JSON.
    const created = ofType(events, 'MetricAlertCreated').map((e) => ({ ...e.data, commit: `${e.position.commit}`, prepare: `${e.position.prepare}` }));
    if (created.length > 0) {
      await client.query(
        `INSERT INTO ${s}.metric_alerts (alert_id, org_id, mode, video_id, metric, condition, created_at, created_commit, created_prepare)
         SELECT "alertId", "orgId", mode, "videoId", metric, condition, at, commit, prepare FROM jsonb_to_recordset($1::jsonb)
           AS a("alertId" text, "orgId" text, mode text, "videoId" text, metric text, condition jsonb, at timestamptz, commit numeric, prepare numeric)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(created)],
      );
    }
    const deleted = ofType(events, 'MetricAlertDeleted');
    if (deleted.length > 0) {
      await client.query(
        `UPDATE ${s}.metric_alerts AS m SET deleted_commit = d.commit, deleted_prepare = d.prepare
         FROM unnest($1::text[], $2::numeric[], $3::numeric[]) AS d(alert_id, commit, prepare)
         WHERE m.alert_id = d.alert_id AND m.deleted_commit IS NULL`,
        [deleted.map((e) => e.data.alertId), deleted.map((e) => `${e.position.commit}`), deleted.map((e) => `${e.position.prepare}`)],
      );
    }
  },
};
