// Standard Webhooks v1 signatures: base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` keyed
// with the secret's decoded base64 part, as `v1,<signature>`; several, space-separated, while
// a rotated-out secret is still valid, so a receiver that knows either secret accepts.
import { createHmac } from 'node:crypto';
import { signingKeyOf } from './secret-box.ts';

export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', signingKeyOf(secret)).update(`${webhookId}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The three headers of a delivery attempt. */
export function webhookHeaders(secrets: readonly string[], webhookId: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, webhookId, timestamp, body)).join(' '),
  };
}
