// Webhook endpoints: create, list, read, change, delete, rotate the secret. Writes are commands
// on the organization's webhooks stream; reads come from the read model. An endpoint belongs
// to its organization and to the mode of the key that made it: a test key's endpoints receive
// only test-mode events, and each kind of key sees only its own.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  sendWebhookTest,
  updateWebhookEndpoint,
} from '../../commands/webhook-commands.ts';
import { listDeliveries, recoverDeliveries, replayDelivery, type DeliveryRow } from '../../notify/webhooks/deliveries.ts';
import { DomainError } from '../../domain/errors.ts';
import { MAX_COUNT } from '../../domain/storable.ts';
import { checkWebhookUrl, type UrlPolicy } from '../../domain/webhook-url.ts';
import { MAX_ENDPOINTS_PER_ORGANIZATION, MAX_URL_LENGTH, PREVIOUS_SECRET_VALID_MS } from '../../domain/webhooks.ts';
import { resolveEndpoint } from '../../notify/webhooks/address-guard.ts';
import { listWebhookEndpoints, readWebhookEndpoint, type WebhookEndpointRow } from '../../../projections/queries.ts';
import type { Caller } from '../auth.ts';
import { awaitProjection, type ApiDeps } from '../context.ts';
import { HttpError, invalidRequest } from '../errors.ts';
import { errorResponse, errorsOf, POSSIBLE_ID } from '../schemas.ts';
import {
  CreatedWebhookEndpoint,
  Deleted,
  DeliveriesQuery,
  DeliveryList,
  DeliveryParams,
  RecoverBody,
  Recovered,
  Replayed,
  TestSent,
  RotatedSecret,
  WEBHOOKS_TAG,
  WebhookCreateBody,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookParams,
  WebhookUpdateBody,
} from '../webhook-schemas.ts';

export function presentWebhookEndpoint(row: WebhookEndpointRow) {
  return {
    id: row.endpoint_id,
    url: row.url,
    events: row.events,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: (row.disabled_reason as 'gone' | 'failing' | null) ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The URL a client sent, checked as a send would check it (scheme, host, resolved addresses); 400 naming `url`. */
export async function checkedUrl(text: string, policy: UrlPolicy): Promise<string> {
  const checked = checkWebhookUrl(text, policy);
  if ('error' in checked) throw invalidRequest([{ field: 'url', message: checked.error }]);
  // Stored, shown and sent as the parser writes it (non-ASCII percent-encoded: up to 12
  // characters for one), which can be many times the text sent. That form is what must fit,
  // or the endpoint as read could not be sent back (nor saved again from the dashboard).
  if (checked.url.href.length > MAX_URL_LENGTH) {
    throw invalidRequest([{ field: 'url', message: `url must be at most ${MAX_URL_LENGTH} characters once percent-encoded` }]);
  }
  const resolved = await resolveEndpoint(checked.url, policy);
  if ('error' in resolved) throw invalidRequest([{ field: 'url', message: resolved.error }]);
  return checked.url.href;
}

export function presentDelivery(row: DeliveryRow) {
  return {
    id: row.delivery_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    last_response_status: row.last_status,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    delivered_at: row.delivered_at?.toISOString() ?? null,
  };
}

/** An opaque cursor bound to its endpoint: the last seen delivery's place. */
function cursorOf(endpointId: string, seq: string): string {
  return Buffer.from(JSON.stringify({ e: endpointId, s: seq })).toString('base64url');
}

function seqOfCursor(endpointId: string, cursor: string): bigint {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { e?: unknown; s?: unknown };
    // A bigint column (MAX_COUNT is its largest value): 19 digits reach past it.
    if (parsed.e === endpointId && typeof parsed.s === 'string' && /^[1-9][0-9]{0,18}$/.test(parsed.s) && BigInt(parsed.s) <= MAX_COUNT) return BigInt(parsed.s);
  } catch {
    // fall through: not one of ours
  }
  throw invalidRequest([{ field: 'cursor', message: 'cursor is not one this endpoint issued' }]);
}

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** An ISO 8601 date-time with a zone, of a day the calendar has (Date.parse takes 30 February for 2 March). */
function isIsoDateTime(text: string): boolean {
  const match = ISO_TIME.exec(text);
  if (!match || Number.isNaN(Date.parse(text))) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const daysInMonth = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  return daysInMonth !== undefined && day >= 1 && day <= daysInMonth;
}

/**
 * Recover: every failed delivery to the endpoint made at or after `since` (ISO 8601 with a
 * zone; 400 naming `since` otherwise) goes back to pending on a fresh schedule, and the
 * dispatcher is woken for it. Answers how many. The API and the dashboard both come here.
 */
export async function recoverFailedSince(deps: Pick<ApiDeps, 'pool' | 'clock'>, webhooks: Pick<NonNullable<ApiDeps['webhooks']>, 'kick'>, endpointId: string, since: string): Promise<number> {
  if (!isIsoDateTime(since)) throw invalidRequest([{ field: 'since', message: 'since must be an ISO 8601 date-time' }]);
  const recovered = await recoverDeliveries(deps.pool, endpointId, new Date(since), deps.clock.now());
  webhooks.kick?.();
  return recovered;
}

// The webhook routes' own errors, for the reference (the shared ones speak of videos), and the
// bodies the routes answer.
const ENDPOINT_ACCESS_DENIED = { description: "Another organization's webhook endpoint", example: { error: 'Access denied' } };
const ENDPOINT_NOT_FOUND = { description: "No such webhook endpoint (of this key's mode)", example: { error: 'Webhook endpoint not found' } };
const DELIVERY_NOT_FOUND = {
  description: "No such webhook endpoint (of this key's mode), or no such delivery of it: `Webhook endpoint not found` or `Delivery not found`",
  example: { error: 'Delivery not found' },
};
const TOO_MANY_ENDPOINTS = {
  description: `The organization has ${MAX_ENDPOINTS_PER_ORGANIZATION} webhook endpoints already, the limit`,
  example: { error: 'Too many webhook endpoints', limit: MAX_ENDPOINTS_PER_ORGANIZATION },
};
const ENDPOINT_DISABLED = { description: 'The endpoint is disabled: enable it first', example: { error: 'Webhook endpoint is disabled' } };

/** The errors of a route on one endpoint: unknown (404), another organization's (403), and its own `more`. */
function endpointErrors(more: Record<number, ReturnType<typeof errorResponse>> = {}) {
  return { ...errorsOf(), 403: errorResponse(403, ENDPOINT_ACCESS_DENIED), 404: errorResponse(404, ENDPOINT_NOT_FOUND), ...more };
}

/**
 * Replay and recover send to the endpoint at once: to a disabled one each delivery would only
 * fail as `endpoint disabled`, its attempts spent and its last answer lost. Refused as a test
 * to it is (409), changing nothing. The API and the dashboard both come here.
 */
export function refuseDisabled(row: Pick<WebhookEndpointRow, 'enabled'>): void {
  if (!row.enabled) throw new HttpError(409, ENDPOINT_DISABLED.example);
}

/** A decider's refusal as the spec's error shape. */
export function webhookDomainError(error: unknown): never {
  if (error instanceof DomainError) {
    if (error.code === 'not_found') throw new HttpError(404, ENDPOINT_NOT_FOUND.example);
    if (error.code === 'limit_reached') throw new HttpError(409, TOO_MANY_ENDPOINTS.example);
    if (error.code === 'invalid_state') throw new HttpError(409, ENDPOINT_DISABLED.example);
    if (error.code === 'invalid_argument') throw invalidRequest([{ field: 'events', message: error.message }]);
  }
  throw error;
}

export const webhookRoutes = (deps: ApiDeps, webhooks: NonNullable<ApiDeps['webhooks']>): FastifyPluginAsyncTypebox => async (app) => {
  /** The caller's endpoint, or 404 (unknown, or of the other mode) / 403 (another organization's). */
  async function ownEndpoint(caller: Caller, id: string): Promise<WebhookEndpointRow> {
    const row = POSSIBLE_ID.test(id) ? await readWebhookEndpoint(deps.pool, id) : null;
    if (!row) throw new HttpError(404, ENDPOINT_NOT_FOUND.example);
    if (row.org_id !== caller.orgId) throw new HttpError(403, ENDPOINT_ACCESS_DENIED.example);
    if (row.mode !== caller.mode) throw new HttpError(404, ENDPOINT_NOT_FOUND.example);
    return row;
  }

  async function readBack(id: string): Promise<WebhookEndpointRow> {
    const row = await readWebhookEndpoint(deps.pool, id);
    // The read model did not catch up within the bounded wait: a server-side condition.
    if (!row) throw new Error(`webhook endpoint ${id} is not in the read model yet`);
    return row;
  }

  app.post(
    '/webhooks',
    {
      schema: {
        operationId: 'createWebhookEndpoint',
        summary: 'Create a webhook endpoint',
        description:
          'Registers a URL to receive the chosen events, signed with Standard Webhooks v1. The answer carries the signing secret, shown only here. A test key makes an endpoint that receives only test-mode events. At most 20 endpoints per organization (409 beyond).',
        tags: [WEBHOOKS_TAG],
        body: WebhookCreateBody,
        response: { 201: CreatedWebhookEndpoint, ...errorsOf(), 409: errorResponse(409, TOO_MANY_ENDPOINTS) },
      },
    },
    async (request, reply) => {
      const caller = request.caller!;
      const url = await checkedUrl(request.body.url, webhooks.policy);
      const created = await createWebhookEndpoint(deps.store, deps.clock, webhooks.box, {
        orgId: caller.orgId,
        mode: caller.mode,
        url,
        events: request.body.events,
        description: request.body.description ?? null,
      }).catch(webhookDomainError);
      await awaitProjection(deps, created.handled.position);
      const event = created.handled.events[0]!;
      if (event.type !== 'WebhookEndpointCreated') throw new Error('unexpected event');
      // From the event, not the read model: the secret is only in this answer, so it must not depend on a lag.
      return reply.code(201).send({
        id: created.endpointId,
        url: event.data.url,
        events: event.data.events,
        description: event.data.description,
        enabled: true,
        disabled_reason: null,
        created_at: event.data.at,
        updated_at: event.data.at,
        secret: created.secret,
      });
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        operationId: 'listWebhookEndpoints',
        summary: 'List webhook endpoints',
        description: "The organization's webhook endpoints of the calling key's mode (live or test), oldest first. Secrets are never shown.",
        tags: [WEBHOOKS_TAG],
        response: { 200: WebhookEndpointList, ...errorsOf() },
      },
    },
    async (request) => {
      const caller = request.caller!;
      const rows = await listWebhookEndpoints(deps.pool, caller.orgId, caller.mode);
      return { webhooks: rows.map(presentWebhookEndpoint), total: rows.length };
    },
  );

  app.get(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'getWebhookEndpoint',
        summary: 'Get a webhook endpoint',
        description: 'One webhook endpoint of the organization. Secrets are never shown.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        response: { 200: WebhookEndpoint, ...endpointErrors() },
      },
    },
    async (request) => presentWebhookEndpoint(await ownEndpoint(request.caller!, request.params.id)),
  );

  app.patch(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint',
        description: 'Changes the URL, the event types, the description, or enables/disables the endpoint. Enabling an endpoint the service disabled (410, or 5 days of failures) clears its `disabled_reason`; enabling a disabled endpoint starts its 5 days of failures afresh.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        body: WebhookUpdateBody,
        response: { 200: WebhookEndpoint, ...endpointErrors() },
      },
    },
    async (request) => {
      const caller = request.caller!;
      const endpoint = await ownEndpoint(caller, request.params.id);
      const body = request.body ?? {};
      const url = body.url === undefined ? undefined : await checkedUrl(body.url, webhooks.policy);
      const handled = await updateWebhookEndpoint(deps.store, deps.clock, deps.pool, {
        orgId: caller.orgId,
        endpointId: endpoint.endpoint_id,
        url,
        events: body.events,
        description: body.description,
        enabled: body.enabled,
      }).catch(webhookDomainError);
      await awaitProjection(deps, handled.position);
      return presentWebhookEndpoint(await readBack(endpoint.endpoint_id));
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      schema: {
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint',
        description: 'Deletes the endpoint: nothing more is sent to it, deliveries not yet made are dropped.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        response: { 200: Deleted, ...endpointErrors() },
      },
    },
    async (request) => {
      const caller = request.caller!;
      const endpoint = await ownEndpoint(caller, request.params.id);
      const handled = await deleteWebhookEndpoint(deps.store, deps.clock, caller.orgId, endpoint.endpoint_id).catch(webhookDomainError);
      await awaitProjection(deps, handled.position);
      return { success: true, id: endpoint.endpoint_id };
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's secret",
        description: `Makes a new signing secret, shown only in this answer. For ${PREVIOUS_SECRET_VALID_MS / 3_600_000} hours (service time) every delivery carries two v1 signatures, one with each secret, so a receiver can switch at its own pace.`,
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        response: { 200: RotatedSecret, ...endpointErrors() },
      },
    },
    async (request) => {
      const caller = request.caller!;
      const endpoint = await ownEndpoint(caller, request.params.id);
      const rotated = await rotateWebhookSecret(deps.store, deps.clock, webhooks.box, caller.orgId, endpoint.endpoint_id).catch(webhookDomainError);
      await awaitProjection(deps, rotated.handled.position);
      const event = rotated.handled.events[0]!;
      if (event.type !== 'WebhookSecretRotated') throw new Error('unexpected event');
      return { id: endpoint.endpoint_id, secret: rotated.secret, previous_secret_expires_at: event.data.previousExpiresAt };
    },
  );

  app.post(
    '/webhooks/:id/test',
    {
      schema: {
        operationId: 'sendWebhookTest',
        summary: 'Send a test event',
        description: 'Sends a `webhook.test` event to this endpoint only, signed and retried like every other delivery; it then shows in the endpoint\'s deliveries. 409 when the endpoint is disabled.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        response: { 202: TestSent, ...endpointErrors({ 409: errorResponse(409, ENDPOINT_DISABLED) }) },
      },
    },
    async (request, reply) => {
      const caller = request.caller!;
      const endpoint = await ownEndpoint(caller, request.params.id);
      const handled = await sendWebhookTest(deps.store, deps.clock, caller.orgId, endpoint.endpoint_id).catch(webhookDomainError);
      await awaitProjection(deps, handled.position);
      return reply.code(202).send({ success: true, id: endpoint.endpoint_id, event_type: 'webhook.test' as const });
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: "List an endpoint's deliveries",
        description: 'Deliveries to this endpoint, newest first, one page at a time: pass `next_cursor` as `cursor` for the next page (null on the last). Each shows its event, status (`pending`, `delivered`, `failed`), attempts, the last HTTP status and when it is tried next.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveryList, ...endpointErrors() },
      },
    },
    async (request) => {
      const endpoint = await ownEndpoint(request.caller!, request.params.id);
      const { limit = 50, cursor } = request.query;
      const before = cursor === undefined ? null : seqOfCursor(endpoint.endpoint_id, cursor);
      // One more than asked: whether a next page exists, without a count.
      const rows = await listDeliveries(deps.pool, endpoint.endpoint_id, before, limit + 1);
      const page = rows.slice(0, limit);
      const next = rows.length > limit ? cursorOf(endpoint.endpoint_id, page[page.length - 1]!.seq) : null;
      return { deliveries: page.map(presentDelivery), total: page.length, limit, next_cursor: next };
    },
  );

  app.post(
    '/webhooks/:id/deliveries/:delivery_id/replay',
    {
      schema: {
        operationId: 'replayWebhookDelivery',
        summary: 'Send a delivery again',
        description: 'Sends the delivery again, with the same body and webhook-id, on a fresh retry schedule. 409 when the endpoint is disabled.',
        tags: [WEBHOOKS_TAG],
        params: DeliveryParams,
        response: { 202: Replayed, ...endpointErrors({ 404: errorResponse(404, DELIVERY_NOT_FOUND), 409: errorResponse(409, ENDPOINT_DISABLED) }) },
      },
    },
    async (request, reply) => {
      const endpoint = await ownEndpoint(request.caller!, request.params.id);
      refuseDisabled(endpoint);
      const deliveryId = request.params.delivery_id;
      const found = POSSIBLE_ID.test(deliveryId) && (await replayDelivery(deps.pool, endpoint.endpoint_id, deliveryId, deps.clock.now()));
      if (!found) throw new HttpError(404, DELIVERY_NOT_FOUND.example);
      webhooks.kick?.();
      return reply.code(202).send({ success: true, delivery_id: deliveryId });
    },
  );

  app.post(
    '/webhooks/:id/recover',
    {
      schema: {
        operationId: 'recoverWebhookDeliveries',
        summary: 'Send failed deliveries again',
        description: 'Sends again every failed delivery to this endpoint made at or after `since`, each with its webhook-id, on a fresh retry schedule. 409 when the endpoint is disabled: enable it first.',
        tags: [WEBHOOKS_TAG],
        params: WebhookParams,
        body: RecoverBody,
        response: { 202: Recovered, ...endpointErrors({ 409: errorResponse(409, ENDPOINT_DISABLED) }) },
      },
    },
    async (request, reply) => {
      const endpoint = await ownEndpoint(request.caller!, request.params.id);
      refuseDisabled(endpoint);
      const recovered = await recoverFailedSince(deps, webhooks, endpoint.endpoint_id, request.body.since);
      return reply.code(202).send({ success: true, recovered });
    },
  );
};
