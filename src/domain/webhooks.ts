// Webhooks stream (`webhooks-<orgId>`): an organization's webhook endpoints and every change
// to them. Test requests go to a stream of their own (`webhook-tests-<orgId>`): they change no
// endpoint, and in the webhooks stream every command would read them all again. A secret never enters the log in clear: events carry it sealed with the server's
// webhook key (src/notify/webhooks/secret-box.ts), so the log can be read, copied and audited
// without giving anyone the power to sign as vidtrack.
import { DomainError } from './errors.ts';
import type { KeyMode } from './platform.ts';

/** Every event type an endpoint can subscribe to (`webhook.test` is sent on request to one endpoint only). */
export const WEBHOOK_EVENT_TYPES = [
  'snapshot.created',
  'tracking.completed',
  'tracking.paused',
  'tracking.resumed',
  'tracking.failed',
  'video.stopped',
  'balance.low',
  'metric.alert',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number] | 'webhook.test';

/** Standard Webhooks' advice and the issue: a bounded number per organization. */
export const MAX_ENDPOINTS_PER_ORGANIZATION = 20;
/** How long a rotated-out secret keeps signing beside the new one (service time). */
export const PREVIOUS_SECRET_VALID_MS = 24 * 3_600_000;
export const MAX_URL_LENGTH = 2_048;
export const MAX_DESCRIPTION_LENGTH = 500;

/** Why an endpoint stopped receiving without anyone asking: it said 410 Gone, or it failed for days. */
export type DisabledReason = 'gone' | 'failing';

export type WebhookEndpointCreated = {
  type: 'WebhookEndpointCreated';
  data: { orgId: string; endpointId: string; mode: KeyMode; url: string; events: string[]; description: string | null; sealedSecret: string; at: string };
};
export type WebhookEndpointUpdated = {
  type: 'WebhookEndpointUpdated';
  /** Only the fields that changed are present. */
  data: { orgId: string; endpointId: string; url?: string; events?: string[]; description?: string | null; enabled?: boolean; at: string };
};
export type WebhookEndpointDisabled = {
  type: 'WebhookEndpointDisabled';
  data: { orgId: string; endpointId: string; reason: DisabledReason; at: string };
};
export type WebhookEndpointDeleted = { type: 'WebhookEndpointDeleted'; data: { orgId: string; endpointId: string; at: string } };
export type WebhookSecretRotated = {
  type: 'WebhookSecretRotated';
  /** The old secret goes on signing until `previousExpiresAt`. */
  data: { orgId: string; endpointId: string; sealedSecret: string; previousSealedSecret: string; previousExpiresAt: string; at: string };
};

/** POST /webhooks/{id}/test: a `webhook.test` delivery to this one endpoint, made from the log like every other. */
export type WebhookTestRequested = { type: 'WebhookTestRequested'; data: { orgId: string; endpointId: string; mode: KeyMode; at: string } };

export type WebhookEvent =
  | WebhookEndpointCreated
  | WebhookEndpointUpdated
  | WebhookEndpointDisabled
  | WebhookEndpointDeleted
  | WebhookSecretRotated
  | WebhookTestRequested;

export interface EndpointState {
  mode: KeyMode;
  enabled: boolean;
  /** When it was created or last enabled again (service time, ISO). */
  enabledAt: string;
  sealedSecret: string;
}

/** Endpoints that exist (deleted ones are dropped). */
export type WebhooksState = ReadonlyMap<string, EndpointState>;
export const initialWebhooksState: WebhooksState = new Map();

export function streamIdOfWebhooks(orgId: string): string {
  return `webhooks-${orgId}`;
}

/** Where `WebhookTestRequested` events are appended; nothing reads this stream back to decide. */
export function streamIdOfWebhookTests(orgId: string): string {
  return `webhook-tests-${orgId}`;
}

export type WebhookCommand =
  | { type: 'CreateEndpoint'; orgId: string; endpointId: string; mode: KeyMode; url: string; events: string[]; description: string | null; sealedSecret: string; now: Date }
  | { type: 'UpdateEndpoint'; orgId: string; endpointId: string; url?: string; events?: string[]; description?: string | null; enabled?: boolean; now: Date }
  /** `attemptedAt`: when the attempt whose answer decides it began. */
  | { type: 'DisableEndpoint'; orgId: string; endpointId: string; reason: DisabledReason; attemptedAt: Date; now: Date }
  | { type: 'DeleteEndpoint'; orgId: string; endpointId: string; now: Date }
  | { type: 'RotateSecret'; orgId: string; endpointId: string; sealedSecret: string; now: Date }
  | { type: 'SendTest'; orgId: string; endpointId: string; now: Date };

export function evolveWebhooks(state: WebhooksState, event: WebhookEvent): WebhooksState {
  const next = new Map(state);
  const d = event.data;
  const endpoint = state.get(d.endpointId);
  switch (event.type) {
    case 'WebhookEndpointCreated':
      next.set(d.endpointId, { mode: event.data.mode, enabled: true, enabledAt: event.data.at, sealedSecret: event.data.sealedSecret });
      return next;
    case 'WebhookEndpointUpdated':
      if (endpoint && event.data.enabled === true && !endpoint.enabled) next.set(d.endpointId, { ...endpoint, enabled: true, enabledAt: event.data.at });
      if (endpoint && event.data.enabled === false) next.set(d.endpointId, { ...endpoint, enabled: false });
      return next;
    case 'WebhookEndpointDisabled':
      if (endpoint) next.set(d.endpointId, { ...endpoint, enabled: false });
      return next;
    case 'WebhookSecretRotated':
      if (endpoint) next.set(d.endpointId, { ...endpoint, sealedSecret: event.data.sealedSecret });
      return next;
    case 'WebhookEndpointDeleted':
      next.delete(d.endpointId);
      return next;
    case 'WebhookTestRequested':
      return state;
  }
}

/** Event types an endpoint may subscribe to: known ones, each once, at least one. */
export function checkEventTypes(events: readonly string[]): string | null {
  if (events.length === 0) return 'events must name at least one event type';
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length > 0) return `unknown event type(s): ${unknown.slice(0, 5).join(', ')}; valid: ${WEBHOOK_EVENT_TYPES.join(', ')}`;
  return null;
}

export function decideWebhooks(command: WebhookCommand, state: WebhooksState): WebhookEvent[] {
  const at = command.now.toISOString();
  const { orgId, endpointId } = command;
  if (command.type === 'CreateEndpoint') {
    if (state.has(endpointId)) throw new DomainError('already_exists', `Webhook endpoint ${endpointId} already exists`);
    if (state.size >= MAX_ENDPOINTS_PER_ORGANIZATION) {
      throw new DomainError('limit_reached', `An organization has at most ${MAX_ENDPOINTS_PER_ORGANIZATION} webhook endpoints`);
    }
    const invalid = checkEventTypes(command.events);
    if (invalid) throw new DomainError('invalid_argument', invalid);
    const { mode, url, description, sealedSecret } = command;
    return [{ type: 'WebhookEndpointCreated', data: { orgId, endpointId, mode, url, events: unique(command.events), description, sealedSecret, at } }];
  }
  const endpoint = state.get(endpointId);
  if (!endpoint) throw new DomainError('not_found', 'Webhook endpoint not found');
  switch (command.type) {
    case 'UpdateEndpoint': {
      if (command.events !== undefined) {
        const invalid = checkEventTypes(command.events);
        if (invalid) throw new DomainError('invalid_argument', invalid);
      }
      const changes = {
        ...(command.url !== undefined ? { url: command.url } : {}),
        ...(command.events !== undefined ? { events: unique(command.events) } : {}),
        ...(command.description !== undefined ? { description: command.description } : {}),
        ...(command.enabled !== undefined ? { enabled: command.enabled } : {}),
      };
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'WebhookEndpointUpdated', data: { orgId, endpointId, ...changes, at } }];
    }
    case 'DisableEndpoint':
      // An attempt begun before the endpoint was enabled again says nothing of it since: the
      // owner's enable wins over a disable decided on the failures it answered.
      if (!endpoint.enabled || command.attemptedAt.getTime() < Date.parse(endpoint.enabledAt)) return [];
      return [{ type: 'WebhookEndpointDisabled', data: { orgId, endpointId, reason: command.reason, at } }];
    case 'DeleteEndpoint':
      return [{ type: 'WebhookEndpointDeleted', data: { orgId, endpointId, at } }];
    case 'SendTest':
      if (!endpoint.enabled) throw new DomainError('invalid_state', 'The webhook endpoint is disabled; enable it first');
      return [{ type: 'WebhookTestRequested', data: { orgId, endpointId, mode: endpoint.mode, at } }];
    case 'RotateSecret': {
      const previousExpiresAt = new Date(command.now.getTime() + PREVIOUS_SECRET_VALID_MS).toISOString();
      return [
        {
          type: 'WebhookSecretRotated',
          data: { orgId, endpointId, sealedSecret: command.sealedSecret, previousSealedSecret: endpoint.sealedSecret, previousExpiresAt, at },
        },
      ];
    }
  }
}

function unique(events: readonly string[]): string[] {
  return [...new Set(events)];
}
