// TypeBox schemas of the webhook routes (kept beside schemas.ts, in the same manner): they
// validate requests, serialize answers and make the OpenAPI document.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_DESCRIPTION_LENGTH, MAX_URL_LENGTH, WEBHOOK_EVENT_TYPES } from '../domain/webhooks.ts';
import { TAGS } from './reference.ts';

export const WEBHOOKS_TAG = TAGS.webhooks;

const EventType = Type.Union(WEBHOOK_EVENT_TYPES.map((t) => Type.Literal(t)), { description: 'An event type an endpoint can subscribe to' });
const Url = Type.String({ maxLength: MAX_URL_LENGTH, description: 'Where events are POSTed: https (http only for hosts in WEBHOOK_ALLOW_HOSTS)' });
const Events = Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length * 2, description: 'The event types sent to this endpoint' });
const Description = Type.String({ maxLength: MAX_DESCRIPTION_LENGTH });

export const WebhookCreateBody = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Description) },
  { additionalProperties: true, examples: [{ url: 'https://example.com/hooks/vidtrack', events: ['snapshot.created', 'tracking.completed'], description: 'CRM sync' }] },
);
export type WebhookCreateBody = Static<typeof WebhookCreateBody>;

export const WebhookUpdateBody = Type.Object(
  { url: Type.Optional(Url), events: Type.Optional(Events), enabled: Type.Optional(Type.Boolean()), description: Type.Optional(Type.Union([Description, Type.Null()])) },
  { additionalProperties: true, examples: [{ enabled: true, events: ['tracking.completed'] }] },
);
export type WebhookUpdateBody = Static<typeof WebhookUpdateBody>;

export const WebhookParams = Type.Object({ id: Type.String({ description: 'The endpoint id (wh_...)' }) });
export type WebhookParams = Static<typeof WebhookParams>;

const endpointFields = {
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Union([Type.String(), Type.Null()]),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.Literal('gone'), Type.Literal('failing'), Type.Null()], {
    description: 'Why the service disabled it: `gone` (it answered 410), `failing` (every delivery failed for 5 days); null otherwise',
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
};
const endpointExample = {
  id: 'wh_3f9c2b7a1d4e4c0f9a8b7c6d',
  url: 'https://example.com/hooks/vidtrack',
  events: ['snapshot.created', 'tracking.completed'],
  description: 'CRM sync',
  enabled: true,
  disabled_reason: null,
  created_at: '2026-03-01T12:00:00.000Z',
  updated_at: '2026-03-01T12:00:00.000Z',
};
const SECRET_EXAMPLE = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw4xnYOdPmM9s=';

export const WebhookEndpoint = Type.Object(endpointFields, { $id: 'WebhookEndpoint', examples: [endpointExample] });

export const CreatedWebhookEndpoint = Type.Object(
  { ...endpointFields, secret: Type.String({ description: 'The signing secret: `whsec_` + base64 of 32 bytes. Shown only in this answer.' }) },
  { examples: [{ ...endpointExample, secret: SECRET_EXAMPLE }] },
);

export const WebhookEndpointList = Type.Object(
  { webhooks: Type.Array(WebhookEndpoint), total: Type.Integer() },
  { examples: [{ webhooks: [endpointExample], total: 1 }] },
);

export const RotatedSecret = Type.Object(
  {
    id: Type.String(),
    secret: Type.String({ description: 'The new signing secret, shown only in this answer' }),
    previous_secret_expires_at: Type.String({ format: 'date-time', description: 'Until then the old secret signs too (a second v1 signature)' }),
  },
  { examples: [{ id: endpointExample.id, secret: SECRET_EXAMPLE, previous_secret_expires_at: '2026-03-02T12:00:00.000Z' }] },
);

export const Deleted = Type.Object({ success: Type.Boolean(), id: Type.String() }, { examples: [{ success: true, id: endpointExample.id }] });

export const TestSent = Type.Object(
  { success: Type.Boolean(), id: Type.String(), event_type: Type.Literal('webhook.test') },
  { examples: [{ success: true, id: endpointExample.id, event_type: 'webhook.test' }] },
);

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: true },
);
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

const deliveryExample = {
  id: 'msg_2b1f0c9e8d7a6b5c4d3e2f1a0b9c8d7e',
  event_id: '9f0c2d4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f',
  event_type: 'snapshot.created',
  status: 'pending',
  attempts: 2,
  last_response_status: 503,
  next_attempt_at: '2026-03-01T12:05:05.000Z',
  created_at: '2026-03-01T12:00:00.000Z',
  delivered_at: null,
};

export const Delivery = Type.Object(
  {
    id: Type.String({ description: 'The delivery id, sent as the webhook-id header on every attempt' }),
    event_id: Type.String(),
    event_type: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
    attempts: Type.Integer(),
    last_response_status: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's last HTTP status; null when it never answered" }),
    next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    delivered_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { $id: 'WebhookDelivery', examples: [deliveryExample] },
);

export const DeliveryList = Type.Object(
  {
    deliveries: Type.Array(Delivery),
    total: Type.Integer({ description: 'The number of deliveries in this answer' }),
    limit: Type.Integer(),
    next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next (older) page; null on the last page' }),
  },
  { examples: [{ deliveries: [deliveryExample], total: 1, limit: 50, next_cursor: null }] },
);

export const DeliveryParams = Type.Object({ id: Type.String(), delivery_id: Type.String() });
export type DeliveryParams = Static<typeof DeliveryParams>;

export const Replayed = Type.Object(
  { success: Type.Boolean(), delivery_id: Type.String() },
  { examples: [{ success: true, delivery_id: deliveryExample.id }] },
);

export const RecoverBody = Type.Object(
  { since: Type.String({ maxLength: 40, description: 'ISO 8601 date-time: failed deliveries made at or after it are sent again' }) },
  { additionalProperties: true, examples: [{ since: '2026-03-01T00:00:00Z' }] },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const Recovered = Type.Object({ success: Type.Boolean(), recovered: Type.Integer({ description: 'How many failed deliveries will be sent again' }) }, { examples: [{ success: true, recovered: 3 }] });
