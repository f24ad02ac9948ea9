// Read model: each organization's metric alerts, for the API and the webhook reactor.
import { ident, ofType, type Projection } from './projection.ts';

export const alertsProjection: Projection = {
  name: 'alerts',
  version: 1,
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
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS metric_alerts_org ON ${ident(schema)}.metric_alerts (org_id, mode, created_at);`,

  async apply(client, schema, events) {
    const s = ident(schema);
    const created = ofType(events, 'MetricAlertCreated').map((e) => e.data);
    if (created.length > 0) {
      await client.query(
        `INSERT INTO ${s}.metric_alerts (alert_id, org_id, mode, video_id, metric, condition, created_at)
         SELECT "alertId", "orgId", mode, "videoId", metric, condition, at FROM jsonb_to_recordset($1::jsonb)
           AS a("alertId" text, "orgId" text, mode text, "videoId" text, metric text, condition jsonb, at timestamptz)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(created)],
      );
    }
    const deleted = ofType(events, 'MetricAlertDeleted').map((e) => e.data.alertId);
    if (deleted.length > 0) await client.query(`DELETE FROM ${s}.metric_alerts WHERE alert_id = ANY($1::text[])`, [deleted]);
  },
};
