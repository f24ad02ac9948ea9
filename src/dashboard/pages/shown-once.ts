// What a form's POST leaves for the page it redirects to (Post/Redirect/Get): the page shows
// it once, and a reload of that page neither shows it again nor sends the form again. The
// session holds it sealed (sessions.ts, holdShownOnce); this is its shape, as JSON.
import type { KeyMode } from '../../domain/platform.ts';
import type { TrackLine } from './videos.ts';

export type ShownOnce =
  /** A new API key's value (/keys). */
  | { kind: 'key-created'; name: string; apiKey: string }
  /** A webhook endpoint's signing secret, new or rotated (/webhooks). */
  | { kind: 'webhook-secret'; url: string; secret: string; rotated?: { previousExpiresAt: string } }
  /** A webhook.test event queued for the endpoint (/webhooks). */
  | { kind: 'webhook-test-sent'; endpointId: string }
  /** Failed deliveries sent again: how many, and the time the form used, kept in it (/webhooks/{id}). */
  | { kind: 'webhook-recovered'; text: string; since: string }
  /** An invitation made: its link, also when its e-mail could not be sent (/members). */
  | { kind: 'invited'; email: string; inviteUrl: string; mailed: boolean; replaced: boolean }
  /** Each pasted line's tracking result (/videos). */
  | { kind: 'tracked'; days: string; mode: KeyMode; results: TrackLine[] }
  /** A confirmation in words. */
  | { kind: 'done'; text: string };

export const encodeShownOnce = (notice: ShownOnce): string => JSON.stringify(notice);

/** The notice, or null for text that is not one (held by an older version of the service). */
export function decodeShownOnce(text: string | null): ShownOnce | null {
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' && typeof (parsed as { kind?: unknown }).kind === 'string' ? (parsed as ShownOnce) : null;
  } catch {
    return null;
  }
}
