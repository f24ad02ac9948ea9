// What the pages need from the dashboard's identity side (src/dashboard: sessions, members,
// keys with their usage counters). The pages only render and route; these do the work.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyMode } from '../../domain/platform.ts';
import type { ShownOnce } from './shown-once.ts';

export interface SignedIn {
  memberId: string;
  orgId: string;
  email: string;
  role: 'owner' | 'member';
}

export interface PageAuth {
  /** The member whose session this request carries, or null. */
  signedIn(request: FastifyRequest): SignedIn | null;
  /** The hidden CSRF input every form of the page carries. */
  csrfField(request: FastifyRequest, reply: FastifyReply): string;
  /** Why this browser could not keep a session (plain http away from loopback), or null. */
  plainHttpProblem(request: FastifyRequest): string | null;
  /** Keeps `notice` in the signed-in request's session for the page at `path` a form redirects to. */
  holdShownOnce(request: FastifyRequest, path: string, notice: ShownOnce): Promise<void>;
  /** What holdShownOnce kept in this request's session for the page at `path`, once; null when nothing is held for it. */
  takeShownOnce(request: FastifyRequest, path: string): Promise<ShownOnce | null>;
}

export interface KeyListing {
  keyId: string;
  name: string;
  mode: KeyMode;
  prefix: string;
  createdAt: Date;
  /** An e-mail, or 'operator' for a key made with the admin CLI. */
  createdBy: string;
  lastUsedAt: Date | null;
  requests: number;
  revoked: boolean;
  videos: Array<{ videoId: string; title: string }>;
}

export interface MemberListing {
  memberId: string;
  email: string;
  role: 'owner' | 'member';
  status: 'invited' | 'active';
  invitedAt: Date;
  invitedBy: string;
}

export type Refusal = { ok: false; error: string };

export interface WebhookListing {
  endpointId: string;
  url: string;
  events: string[];
  description: string | null;
  mode: KeyMode;
  enabled: boolean;
  /** Why the service disabled it on its own: it answered 410 Gone, or failed for 5 days. */
  disabledReason: 'gone' | 'failing' | null;
  createdAt: Date;
}

export interface DeliveryListing {
  deliveryId: string;
  eventType: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** A webhook command's answer: done, refused by the API's checks (its message), or no such endpoint of this organization. */
export type WebhookOutcome<T = object> = ({ ok: true } & T) | Refusal | 'not_found';

export interface DashboardCommands {
  orgName(orgId: string): Promise<string>;
  listKeys(orgId: string): Promise<KeyListing[]>;
  createKey(orgId: string, input: { name: string; mode: KeyMode; by: SignedIn }): Promise<{ keyId: string; apiKey: string }>;
  /**
   * The revoke command. 'deleted': the read models show it, and the key stops working in every
   * API process. 'recorded': it is in the log, but the read models did not show it within the
   * wait, so the key may still work and be listed for a moment.
   */
  deleteKey(orgId: string, keyId: string, by: SignedIn): Promise<'deleted' | 'recorded' | 'not_found'>;
  listMembers(orgId: string): Promise<MemberListing[]>;
  /** `mailed` false: the invitation stands, but its e-mail could not be sent (the link is shown instead). */
  /** `replaced`: the address had an unused invitation (lost, expired), whose link no longer works. */
  inviteMember(orgId: string, input: { email: string; role: 'owner' | 'member'; by: SignedIn }): Promise<{ ok: true; inviteUrl: string; mailed: boolean; replaced: boolean } | Refusal>;
  removeMember(orgId: string, memberId: string, by: SignedIn): Promise<{ ok: true } | Refusal>;
  /** Both modes' endpoints, oldest first. */
  listWebhooks(orgId: string): Promise<WebhookListing[]>;
  /** The organization's endpoint, or null (unknown, or another organization's). */
  readWebhook(orgId: string, endpointId: string): Promise<WebhookListing | null>;
  /** The newest deliveries to the endpoint (at most `limit`), or null when it is not the organization's. */
  listWebhookDeliveries(orgId: string, endpointId: string, limit: number): Promise<DeliveryListing[] | null>;
  /** The API's create: the URL checked as a send would check it, the decider's refusals; the secret is only in this answer. */
  createWebhook(orgId: string, input: { url: string; events: string[]; description: string | null; mode: KeyMode }): Promise<{ ok: true; endpointId: string; secret: string } | Refusal>;
  /** The API's PATCH of URL, events and description, with its checks and its messages. */
  updateWebhook(orgId: string, endpointId: string, input: { url: string; events: string[]; description: string | null }): Promise<WebhookOutcome>;
  setWebhookEnabled(orgId: string, endpointId: string, enabled: boolean): Promise<WebhookOutcome>;
  sendWebhookTest(orgId: string, endpointId: string): Promise<WebhookOutcome>;
  rotateWebhookSecret(orgId: string, endpointId: string): Promise<WebhookOutcome<{ secret: string; previousExpiresAt: string }>>;
  deleteWebhook(orgId: string, endpointId: string): Promise<WebhookOutcome>;
  replayWebhookDelivery(orgId: string, endpointId: string, deliveryId: string): Promise<WebhookOutcome>;
  /** The API's recover: failed deliveries made at or after `since` (ISO 8601, as the API takes it) sent again; how many. */
  recoverWebhookDeliveries(orgId: string, endpointId: string, since: string): Promise<WebhookOutcome<{ recovered: number }>>;
}
