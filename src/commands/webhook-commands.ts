// Webhook endpoint commands: each appends to the organization's webhooks stream through its
// decider. A new secret leaves here once, in the answer; the log keeps it sealed.
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import type { KeyMode } from '../domain/platform.ts';
import { streamIdOfWebhooks, streamIdOfWebhookTests, type DisabledReason, type WebhookEvent, type WebhooksState } from '../domain/webhooks.ts';
import type { EventStore } from '../eventstore/port.ts';
import { clearFailingSince } from '../notify/webhooks/marks.ts';
import { newWebhookSecret, type SecretBox } from '../notify/webhooks/secret-box.ts';
import { webhooksDecider } from './deciders.ts';
import { handleCommand, loadState, type Handled } from './handle.ts';
import { newId } from './ids.ts';

export async function createWebhookEndpoint(
  store: EventStore,
  clock: Clock,
  box: SecretBox,
  input: { orgId: string; mode: KeyMode; url: string; events: string[]; description: string | null },
) {
  const endpointId = `wh_${newId().replaceAll('-', '').slice(0, 24)}`;
  const secret = newWebhookSecret();
  const handled = await handleCommand(store, streamIdOfWebhooks(input.orgId), webhooksDecider, {
    type: 'CreateEndpoint',
    endpointId,
    ...input,
    sealedSecret: box.seal(secret),
    now: clock.now(),
  });
  return { endpointId, secret, handled };
}

/**
 * Enabling an endpoint the log holds disabled first starts its 5 days of failures afresh, so the
 * failures from before it was disabled do not disable it again at its first failure since. The
 * log decides, not the read model, which may not show a disable made a moment before.
 */
export async function updateWebhookEndpoint(
  store: EventStore,
  clock: Clock,
  pool: Pool,
  input: { orgId: string; endpointId: string; url?: string; events?: string[]; description?: string | null; enabled?: boolean },
) {
  if (input.enabled === true) {
    const { state } = await loadState(store, streamIdOfWebhooks(input.orgId), webhooksDecider);
    if (state.get(input.endpointId)?.enabled === false) await clearFailingSince(pool, input.endpointId);
  }
  return handleCommand(store, streamIdOfWebhooks(input.orgId), webhooksDecider, { type: 'UpdateEndpoint', ...input, now: clock.now() });
}

export function deleteWebhookEndpoint(store: EventStore, clock: Clock, orgId: string, endpointId: string) {
  return handleCommand(store, streamIdOfWebhooks(orgId), webhooksDecider, { type: 'DeleteEndpoint', orgId, endpointId, now: clock.now() });
}

export function disableWebhookEndpoint(store: EventStore, clock: Clock, orgId: string, endpointId: string, reason: DisabledReason, attemptedAt: Date) {
  return handleCommand(store, streamIdOfWebhooks(orgId), webhooksDecider, { type: 'DisableEndpoint', orgId, endpointId, reason, attemptedAt, now: clock.now() });
}

export async function rotateWebhookSecret(store: EventStore, clock: Clock, box: SecretBox, orgId: string, endpointId: string) {
  const secret = newWebhookSecret();
  const handled = await handleCommand(store, streamIdOfWebhooks(orgId), webhooksDecider, {
    type: 'RotateSecret',
    orgId,
    endpointId,
    sealedSecret: box.seal(secret),
    now: clock.now(),
  });
  return { secret, handled };
}

/**
 * Decided on the endpoint's state, appended to the organization's test stream with no expected
 * revision: tests sent at once never conflict, and the webhooks stream does not grow with them.
 * An endpoint disabled in the same moment may still get its test, as it would had the test come
 * a moment earlier.
 */
export async function sendWebhookTest(store: EventStore, clock: Clock, orgId: string, endpointId: string): Promise<Handled<WebhooksState, WebhookEvent>> {
  const { state } = await loadState(store, streamIdOfWebhooks(orgId), webhooksDecider);
  const events = webhooksDecider.decide({ type: 'SendTest', orgId, endpointId, now: clock.now() }, state);
  const result = await store.append(streamIdOfWebhookTests(orgId), events, 'any');
  return { events, state, position: result.position };
}
