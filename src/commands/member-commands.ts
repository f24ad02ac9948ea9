// Membership commands: invite, join (the invitation's one use), remove. Each appends to the
// organization's members stream through its decider; the invitation's token leaves here once,
// to be e-mailed, and only its hash is kept.
import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { INVITE_VALID_MS, streamIdOfMembers, type MemberRole } from '../domain/members.ts';
import type { EventStore } from '../eventstore/port.ts';
import { membersDecider } from './deciders.ts';
import { handleCommand } from './handle.ts';
import { newId } from './ids.ts';

export function hashInviteToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * `by`: the inviting member's id, or 'operator'. `wall`: real time, for the 7-day expiry. An
 * address with an unused invitation (pending or expired) is invited again: that one is replaced.
 */
export async function inviteMember(store: EventStore, clock: Clock, wall: Clock, input: { orgId: string; email: string; role: MemberRole; by: string }) {
  const memberId = `mem_${newId().replaceAll('-', '').slice(0, 20)}`;
  const token = randomBytes(32).toString('base64url');
  const handled = await handleCommand(store, streamIdOfMembers(input.orgId), membersDecider, {
    type: 'Invite',
    orgId: input.orgId,
    memberId,
    email: input.email,
    role: input.role,
    inviteHash: hashInviteToken(token),
    expiresAt: new Date(wall.now().getTime() + INVITE_VALID_MS),
    by: input.by,
    now: clock.now(),
  });
  const invited = handled.events.find((e) => e.type === 'MemberInvited');
  // An unused invitation of the address, replaced by this one (its link no longer works).
  const replaced = handled.events.flatMap((e) => (e.type === 'MemberRemoved' ? [e.data.memberId] : []));
  return { memberId, email: invited?.type === 'MemberInvited' ? invited.data.email : input.email, token, replaced, position: handled.position };
}

export async function joinMember(store: EventStore, clock: Clock, wall: Clock, input: { orgId: string; memberId: string; token: string }) {
  return handleCommand(store, streamIdOfMembers(input.orgId), membersDecider, {
    type: 'Join',
    orgId: input.orgId,
    memberId: input.memberId,
    inviteHash: hashInviteToken(input.token),
    wallNow: wall.now(),
    now: clock.now(),
  });
}

export async function removeMember(store: EventStore, clock: Clock, input: { orgId: string; memberId: string; by: string }) {
  return handleCommand(store, streamIdOfMembers(input.orgId), membersDecider, { type: 'Remove', ...input, now: clock.now() });
}
