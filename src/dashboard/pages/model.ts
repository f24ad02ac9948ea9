// What the pages need from the dashboard's identity side (src/dashboard: sessions, members,
// keys with their usage counters). The pages only render and route; these do the work.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyMode } from '../../domain/platform.ts';

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

export interface DashboardCommands {
  orgName(orgId: string): Promise<string>;
  listKeys(orgId: string): Promise<KeyListing[]>;
  createKey(orgId: string, input: { name: string; mode: KeyMode; by: SignedIn }): Promise<{ keyId: string; apiKey: string }>;
  /** The revoke command: the key stops working in every API process once this returns. */
  deleteKey(orgId: string, keyId: string, by: SignedIn): Promise<'deleted' | 'not_found'>;
  listMembers(orgId: string): Promise<MemberListing[]>;
  /** `mailed` false: the invitation stands, but its e-mail could not be sent (the link is shown instead). */
  inviteMember(orgId: string, input: { email: string; role: 'owner' | 'member'; by: SignedIn }): Promise<{ ok: true; inviteUrl: string; mailed: boolean } | Refusal>;
  removeMember(orgId: string, memberId: string, by: SignedIn): Promise<{ ok: true } | Refusal>;
}
