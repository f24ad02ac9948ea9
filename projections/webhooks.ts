// Read model: each organization's webhook endpoints as the API shows them and the webhook
// reactor reads them (secrets only in their sealed form). Each row keeps the log position of its
// endpoint's creation: the reactor, however far behind, sends an endpoint only what the log
// holds after it.
import { ident, ofType, type LoggedEvent, type Projection } from './projection.ts';

/** One endpoint's changes in a page, folded in log order (an update carries only what it changes). */
interface Patch {
  endpoint_id: string;
  url?: string;
  events?: string[];
  has_description?: boolean;
  description?: string | null;
  enabled?: boolean;
  disabled_reason?: string | null;
  sealed_secret?: string;
  previous_sealed_secret?: string;
  previous_expires_at?: string;
  updated_at: string;
}

export const webhooksProjection: Projection = {
  name: 'webhooks',
  // 2: the log position of the endpoint's creation.
  version: 2,
  tables: ['webhook_endpoints'],
  consumes: ['WebhookEndpointCreated', 'WebhookEndpointUpdated', 'WebhookEndpointDisabled', 'WebhookSecretRotated', 'WebhookEndpointDeleted'],
  ddl: (schema) => `
    CREATE TABLE IF NOT EXISTS ${ident(schema)}.webhook_endpoints (
      endpoint_id text PRIMARY KEY,
      org_id text NOT NULL,
      mode text NOT NULL,
      url text NOT NULL,
      events text[] NOT NULL,
      description text,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      sealed_secret text NOT NULL,
      previous_sealed_secret text,
      previous_expires_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      created_commit numeric NOT NULL,
      created_prepare numeric NOT NULL
    );
    CREATE INDEX IF NOT EXISTS webhook_endpoints_org ON ${ident(schema)}.webhook_endpoints (org_id, mode, created_at);`,

  async apply(client, schema, events) {
    const s = ident(schema);
    // Positions as decimal strings: bigints do not go through JSON.
    const created = ofType(events, 'WebhookEndpointCreated').map((e) => ({ ...e.data, commit: `${e.position.commit}`, prepare: `${e.position.prepare}` }));
    if (created.length > 0) {
      await client.query(
        `INSERT INTO ${s}.webhook_endpoints (endpoint_id, org_id, mode, url, events, description, sealed_secret, created_at, updated_at, created_commit, created_prepare)
         SELECT "endpointId", "orgId", mode, url, ARRAY(SELECT jsonb_array_elements_text(events)), description, "sealedSecret", at, at, commit, prepare
         FROM jsonb_to_recordset($1::jsonb) AS w("endpointId" text, "orgId" text, mode text, url text, events jsonb, description text, "sealedSecret" text,
           at timestamptz, commit numeric, prepare numeric)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(created)],
      );
    }
    const patches = foldPatches(events);
    if (patches.length > 0) {
      await client.query(
        `UPDATE ${s}.webhook_endpoints w SET
           url = coalesce(p.url, w.url),
           events = CASE WHEN p.events IS NULL THEN w.events ELSE ARRAY(SELECT jsonb_array_elements_text(p.events)) END,
           description = CASE WHEN coalesce(p.has_description, false) THEN p.description ELSE w.description END,
           enabled = coalesce(p.enabled, w.enabled),
           disabled_reason = CASE WHEN p.enabled IS NULL THEN w.disabled_reason ELSE p.disabled_reason END,
           sealed_secret = coalesce(p.sealed_secret, w.sealed_secret),
           previous_sealed_secret = coalesce(p.previous_sealed_secret, w.previous_sealed_secret),
           previous_expires_at = coalesce(p.previous_expires_at, w.previous_expires_at),
           updated_at = p.updated_at
         FROM jsonb_to_recordset($1::jsonb) AS p(endpoint_id text, url text, events jsonb, has_description boolean, description text,
           enabled boolean, disabled_reason text, sealed_secret text, previous_sealed_secret text, previous_expires_at timestamptz, updated_at timestamptz)
         WHERE w.endpoint_id = p.endpoint_id`,
        [JSON.stringify(patches)],
      );
    }
    const deleted = ofType(events, 'WebhookEndpointDeleted').map((e) => e.data.endpointId);
    if (deleted.length > 0) await client.query(`DELETE FROM ${s}.webhook_endpoints WHERE endpoint_id = ANY($1::text[])`, [deleted]);
  },
};

function foldPatches(events: readonly LoggedEvent[]): Patch[] {
  const patches = new Map<string, Patch>();
  for (const event of events) {
    if (event.type !== 'WebhookEndpointUpdated' && event.type !== 'WebhookEndpointDisabled' && event.type !== 'WebhookSecretRotated') continue;
    const d = event.data;
    const patch: Patch = patches.get(d.endpointId) ?? { endpoint_id: d.endpointId, updated_at: d.at };
    patch.updated_at = d.at;
    if (event.type === 'WebhookEndpointUpdated') {
      const u = event.data;
      if (u.url !== undefined) patch.url = u.url;
      if (u.events !== undefined) patch.events = u.events;
      if (u.description !== undefined) Object.assign(patch, { has_description: true, description: u.description });
      if (u.enabled !== undefined) Object.assign(patch, { enabled: u.enabled, disabled_reason: null });
    } else if (event.type === 'WebhookEndpointDisabled') {
      Object.assign(patch, { enabled: false, disabled_reason: event.data.reason });
    } else {
      const r = event.data;
      Object.assign(patch, { sealed_secret: r.sealedSecret, previous_sealed_secret: r.previousSealedSecret, previous_expires_at: r.previousExpiresAt });
    }
    patches.set(d.endpointId, patch);
  }
  return [...patches.values()];
}
