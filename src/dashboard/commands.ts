// What the pages ask of the dashboard (pages/model.ts), done with the service's commands and
// the dashboard's reads: keys through the account commands, members through the members
// stream, each answer given once the read models show the change.
import type { ApiDeps } from '../api/context.ts';
import { awaitProjection } from '../api/context.ts';
import { issueKey, revokeKey } from '../commands/account-commands.ts';
import { inviteMember, removeMember } from '../commands/member-commands.ts';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  sendWebhookTest,
  updateWebhookEndpoint,
} from '../commands/webhook-commands.ts';
import { HttpError } from '../api/errors.ts';
import { checkedUrl, recoverFailedSince, refuseDisabled, webhookDomainError } from '../api/routes/webhooks.ts';
import { POSSIBLE_ID } from '../api/schemas.ts';
import { listDeliveries, replayDelivery } from '../notify/webhooks/deliveries.ts';
import { listWebhookEndpoints, readWebhookEndpoint, type WebhookEndpointRow } from '../../projections/queries.ts';
import type { Clock } from '../clock.ts';
import type { Position } from '../eventstore/port.ts';
import { DomainError } from '../domain/errors.ts';
import type { MailOptions } from '../notify/mailer.ts';
import { inviteUrl, sendInvitation } from './invitations.ts';
import type { DashboardCommands, Refusal, WebhookListing } from './pages/model.ts';
import { isActiveKeyOf, listKeys, listMembers, organizationName } from './reads.ts';
import type { Sessions } from './sessions.ts';

export interface DashboardOptions {
  /** Real time, for sessions and invitations (TIME_SCALE speeds up only the service's clock). */
  wall: Clock;
  mail: MailOptions;
  /** Where people reach the dashboard (PUBLIC_URL, else the address the API listens on), for invitation links. */
  baseUrl(): string;
  onError(error: unknown, what: string): void;
}

function webhookListing(row: WebhookEndpointRow): WebhookListing {
  return {
    endpointId: row.endpoint_id,
    url: row.url,
    events: row.events,
    description: row.description,
    mode: row.mode,
    enabled: row.enabled,
    disabledReason: (row.disabled_reason as 'gone' | 'failing' | null) ?? null,
    createdAt: row.created_at,
  };
}

/**
 * The API's answer to a webhook command, for a page: its 404 is 'not_found', its other
 * refusals (checkedUrl's 400 naming the field, the decider's refusals through
 * webhookDomainError) their message. One set of rules, the API's.
 */
function webhookRefusal(error: unknown): Refusal | 'not_found' {
  let http = error;
  if (!(http instanceof HttpError)) {
    try {
      webhookDomainError(error);
    } catch (mapped) {
      http = mapped;
    }
  }
  if (!(http instanceof HttpError)) throw error;
  if (http.statusCode === 404) return 'not_found';
  const details = http.body.details as Array<{ field: string; message: string }> | undefined;
  if (details && details.length > 0) return { ok: false, error: details.map((d) => d.message).join('; ') };
  if (typeof http.body.limit === 'number') return { ok: false, error: `${http.body.error}: an organization has at most ${http.body.limit}. Delete one first.` };
  return { ok: false, error: http.body.error };
}

export function dashboardCommands(deps: ApiDeps, options: DashboardOptions, sessions: Sessions): DashboardCommands {
  const { pool, store, clock } = deps;
  const webhookApi = () => {
    if (!deps.webhooks) throw new Error('webhooks are not configured in this process');
    return deps.webhooks;
  };
  /** The organization's endpoint (either mode), or null: another organization's is as absent as a missing one. */
  const ownEndpoint = async (orgId: string, endpointId: string) => {
    const row = POSSIBLE_ID.test(endpointId) ? await readWebhookEndpoint(pool, endpointId) : null;
    return row && row.org_id === orgId ? row : null;
  };
  /** Runs a webhooks-stream command on the organization's endpoint and waits for the read model. */
  const onEndpoint = async <T extends object>(orgId: string, endpointId: string, run: (row: WebhookEndpointRow) => Promise<{ position: Position | null; answer: T }>) => {
    const row = await ownEndpoint(orgId, endpointId);
    if (!row) return 'not_found' as const;
    try {
      const done = await run(row);
      await awaitProjection(deps, done.position);
      return { ok: true as const, ...done.answer };
    } catch (error) {
      return webhookRefusal(error);
    }
  };
  return {
    orgName: async (orgId) => (await organizationName(pool, orgId)) ?? orgId,
    listKeys: (orgId) => listKeys(pool, orgId),
    async createKey(orgId, { name, mode, by }) {
      const issued = await issueKey(store, clock, { orgId, name, mode, issuedBy: by.memberId });
      await awaitProjection(deps, issued.position);
      return { keyId: issued.keyId, apiKey: issued.apiKey };
    },
    async deleteKey(orgId, keyId) {
      if (!(await isActiveKeyOf(pool, orgId, keyId))) return 'not_found';
      const revoked = await revokeKey(store, clock, orgId, keyId);
      return (await awaitProjection(deps, revoked.position)) ? 'deleted' : 'recorded';
    },
    listMembers: (orgId) => listMembers(pool, orgId),
    async inviteMember(orgId, { email, role, by }) {
      try {
        const invited = await inviteMember(store, clock, options.wall, { orgId, email, role, by: by.memberId });
        await awaitProjection(deps, invited.position);
        const url = inviteUrl(options.baseUrl(), invited.token);
        const replaced = invited.replaced.length > 0;
        try {
          await sendInvitation(options.mail, { memberId: invited.memberId, email: invited.email, orgName: (await organizationName(pool, orgId)) ?? orgId, url });
        } catch (error) {
          options.onError(error, 'invitation e-mail');
          return { ok: true, inviteUrl: url, mailed: false, replaced };
        }
        return { ok: true, inviteUrl: url, mailed: true, replaced };
      } catch (error) {
        if (error instanceof DomainError) return { ok: false, error: error.message };
        throw error;
      }
    },
    async removeMember(orgId, memberId, by) {
      try {
        const removed = await removeMember(store, clock, { orgId, memberId, by: by.memberId });
        await sessions.endAllOf(memberId);
        await awaitProjection(deps, removed.position);
        return { ok: true };
      } catch (error) {
        if (error instanceof DomainError) return { ok: false, error: error.message };
        throw error;
      }
    },
    async listWebhooks(orgId) {
      const [live, test] = await Promise.all([listWebhookEndpoints(pool, orgId, 'live'), listWebhookEndpoints(pool, orgId, 'test')]);
      return [...live, ...test].sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.endpoint_id.localeCompare(b.endpoint_id)).map(webhookListing);
    },
    async readWebhook(orgId, endpointId) {
      const row = await ownEndpoint(orgId, endpointId);
      return row ? webhookListing(row) : null;
    },
    async listWebhookDeliveries(orgId, endpointId, limit) {
      const row = await ownEndpoint(orgId, endpointId);
      if (!row) return null;
      const rows = await listDeliveries(pool, row.endpoint_id, null, limit);
      return rows.map((d) => ({
        deliveryId: d.delivery_id,
        eventType: d.event_type,
        status: d.status,
        attempts: d.attempts,
        lastStatus: d.last_status,
        nextAttemptAt: d.next_attempt_at,
        createdAt: d.created_at,
      }));
    },
    async createWebhook(orgId, { url, events, description, mode }) {
      const { box, policy } = webhookApi();
      try {
        const checked = await checkedUrl(url, policy);
        const created = await createWebhookEndpoint(store, clock, box, { orgId, mode, url: checked, events, description });
        await awaitProjection(deps, created.handled.position);
        return { ok: true, endpointId: created.endpointId, secret: created.secret };
      } catch (error) {
        const refused = webhookRefusal(error);
        if (refused === 'not_found') throw error;
        return refused;
      }
    },
    // The API's PATCH with what the edit form holds: the URL checked as a send would check
    // it, the events by the decider; description null clears it, as in the API.
    updateWebhook: (orgId, endpointId, { url, events, description }) =>
      onEndpoint(orgId, endpointId, async (row) => {
        const checked = await checkedUrl(url, webhookApi().policy);
        const handled = await updateWebhookEndpoint(store, clock, pool, { orgId, endpointId: row.endpoint_id, url: checked, events, description });
        return { position: handled.position, answer: {} };
      }),
    setWebhookEnabled: (orgId, endpointId, enabled) =>
      onEndpoint(orgId, endpointId, async (row) => {
        const handled = await updateWebhookEndpoint(store, clock, pool, { orgId, endpointId: row.endpoint_id, enabled });
        return { position: handled.position, answer: {} };
      }),
    sendWebhookTest: (orgId, endpointId) =>
      onEndpoint(orgId, endpointId, async (row) => {
        try {
          const handled = await sendWebhookTest(store, clock, orgId, row.endpoint_id);
          return { position: handled.position, answer: {} };
        } catch (error) {
          // As the API answers it (409): a disabled endpoint gets no test.
          if (error instanceof DomainError && error.code === 'invalid_state') throw new HttpError(409, { error: 'The endpoint is disabled: enable it first.' });
          throw error;
        }
      }),
    rotateWebhookSecret: (orgId, endpointId) =>
      onEndpoint(orgId, endpointId, async (row) => {
        const rotated = await rotateWebhookSecret(store, clock, webhookApi().box, orgId, row.endpoint_id);
        const event = rotated.handled.events[0]!;
        if (event.type !== 'WebhookSecretRotated') throw new Error('unexpected event');
        return { position: rotated.handled.position, answer: { secret: rotated.secret, previousExpiresAt: event.data.previousExpiresAt } };
      }),
    deleteWebhook: (orgId, endpointId) =>
      onEndpoint(orgId, endpointId, async (row) => {
        const handled = await deleteWebhookEndpoint(store, clock, orgId, row.endpoint_id);
        return { position: handled.position, answer: {} };
      }),
    // Deliveries are not in the log: nothing to wait for before the page shows them pending.
    recoverWebhookDeliveries: (orgId, endpointId, since) =>
      onEndpoint(orgId, endpointId, async (row) => {
        refuseDisabled(row);
        const recovered = await recoverFailedSince(deps, webhookApi(), row.endpoint_id, since);
        return { position: null, answer: { recovered } };
      }),
    async replayWebhookDelivery(orgId, endpointId, deliveryId) {
      const row = await ownEndpoint(orgId, endpointId);
      if (!row) return 'not_found';
      try {
        refuseDisabled(row);
      } catch (error) {
        return webhookRefusal(error);
      }
      const found = POSSIBLE_ID.test(deliveryId) && (await replayDelivery(pool, row.endpoint_id, deliveryId, clock.now()));
      if (!found) return 'not_found';
      webhookApi().kick?.();
      return { ok: true };
    },
  };
}
