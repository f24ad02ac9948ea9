// Members stream (`members-<orgId>`): the people who may sign in to an organization's
// dashboard, and every change to who they are, with who made it and when. An invitation
// carries only the hash of its token; it works once, until it expires (wall time: people's
// deadlines do not speed up with TIME_SCALE) or the address is invited again (a lost or expired
// invitation is sent anew, and the new one replaces it). Passwords and sessions are not events:
// they are secrets kept as hashes in the dashboard's own tables (src/dashboard).
import { DomainError } from './errors.ts';

export type MemberRole = 'owner' | 'member';
export const MEMBER_ROLES: readonly MemberRole[] = ['owner', 'member'];

/** `by`: the member who acted, or 'operator' for the admin CLI. */
export type MemberInvited = {
  type: 'MemberInvited';
  data: { orgId: string; memberId: string; email: string; role: MemberRole; inviteHash: string; expiresAt: string; by: string; at: string };
};
export type MemberJoined = { type: 'MemberJoined'; data: { orgId: string; memberId: string; at: string } };
export type MemberRemoved = { type: 'MemberRemoved'; data: { orgId: string; memberId: string; by: string; at: string } };
export type MemberEvent = MemberInvited | MemberJoined | MemberRemoved;

export interface MemberState {
  email: string;
  role: MemberRole;
  status: 'invited' | 'active' | 'removed';
  inviteHash: string;
  expiresAt: string;
}

export type MembersState = ReadonlyMap<string, MemberState>;
export const initialMembersState: MembersState = new Map();

export type MemberCommand =
  | { type: 'Invite'; orgId: string; memberId: string; email: string; role: MemberRole; inviteHash: string; expiresAt: Date; by: string; now: Date }
  | { type: 'Join'; orgId: string; memberId: string; inviteHash: string; wallNow: Date; now: Date }
  | { type: 'Remove'; orgId: string; memberId: string; by: string; now: Date };

export const INVITE_VALID_MS = 7 * 24 * 3_600_000;

export function streamIdOfMembers(orgId: string): string {
  return `members-${orgId}`;
}

/** Lower case and trimmed: one person, one address, however it was typed. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL = /^[^\s@<>()[\]\\,;:"]{1,64}@[^\s@<>()[\]\\,;:"]{1,190}\.[a-z]{2,}$/i;

export function isEmail(text: string): boolean {
  return text.length <= 254 && EMAIL.test(text);
}

export function evolveMembers(state: MembersState, event: MemberEvent): MembersState {
  const next = new Map(state);
  const d = event.data;
  switch (event.type) {
    case 'MemberInvited':
      next.set(d.memberId, { email: event.data.email, role: event.data.role, status: 'invited', inviteHash: event.data.inviteHash, expiresAt: event.data.expiresAt });
      return next;
    case 'MemberJoined': {
      const member = state.get(d.memberId);
      if (member) next.set(d.memberId, { ...member, status: 'active' });
      return next;
    }
    case 'MemberRemoved': {
      const member = state.get(d.memberId);
      if (member) next.set(d.memberId, { ...member, status: 'removed' });
      return next;
    }
  }
}

export function decideMembers(command: MemberCommand, state: MembersState): MemberEvent[] {
  const at = command.now.toISOString();
  switch (command.type) {
    case 'Invite': {
      const email = normalizeEmail(command.email);
      if (!isEmail(email)) throw new DomainError('invalid_argument', 'Enter a valid e-mail address.');
      const current = [...state.entries()].filter(([, m]) => m.email === email && m.status !== 'removed');
      if (current.some(([, m]) => m.status === 'active')) throw new DomainError('already_exists', `${email} is already a member.`);
      const { orgId, memberId, role, inviteHash, by } = command;
      // An invitation not yet used (lost, or expired) is replaced: it is removed, as an owner
      // removes it from the members page, so its link stops working; the new one has its own.
      const replaced: MemberEvent[] = current.map(([id]) => ({ type: 'MemberRemoved', data: { orgId, memberId: id, by, at } }));
      return [...replaced, { type: 'MemberInvited', data: { orgId, memberId, email, role, inviteHash, expiresAt: command.expiresAt.toISOString(), by, at } }];
    }
    case 'Join': {
      const member = state.get(command.memberId);
      if (!member || member.status !== 'invited' || member.inviteHash !== command.inviteHash) {
        throw new DomainError('not_found', 'This invitation has been used or does not exist.');
      }
      if (Date.parse(member.expiresAt) <= command.wallNow.getTime()) throw new DomainError('invalid_state', 'This invitation has expired.');
      return [{ type: 'MemberJoined', data: { orgId: command.orgId, memberId: command.memberId, at } }];
    }
    case 'Remove': {
      const member = state.get(command.memberId);
      if (!member || member.status === 'removed') throw new DomainError('not_found', 'No such member.');
      if (command.memberId === command.by) throw new DomainError('invalid_argument', 'You cannot remove yourself.');
      const owners = [...state.entries()].filter(([id, m]) => m.role === 'owner' && m.status === 'active' && id !== command.memberId);
      if (member.role === 'owner' && member.status === 'active' && owners.length === 0) {
        throw new DomainError('invalid_state', 'An organization keeps at least one owner.');
      }
      return [{ type: 'MemberRemoved', data: { orgId: command.orgId, memberId: command.memberId, by: command.by, at } }];
    }
  }
}
