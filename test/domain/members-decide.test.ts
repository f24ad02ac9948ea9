// The members decider: an invitation is for one new address, works once and only until it
// expires; an organization keeps an owner; nobody removes themselves.
import { describe, it } from 'node:test';
import { membersDecider } from '../../src/commands/deciders.ts';
import type { MemberCommand, MemberEvent } from '../../src/domain/members.ts';
import { deciderSpec } from './decider-spec.ts';

const given = deciderSpec(membersDecider);
const now = new Date('2026-11-01T00:00:00.000Z');
const at = now.toISOString();
const orgId = 'org_1';
const expiresAt = '2026-11-08T00:00:00.000Z';

const invite = (memberId: string, email: string, role: 'owner' | 'member' = 'member'): MemberCommand => ({
  type: 'Invite', orgId, memberId, email, role, inviteHash: `hash-${memberId}`, expiresAt: new Date(expiresAt), by: 'operator', now,
});
const invited = (memberId: string, email: string, role: 'owner' | 'member' = 'member'): MemberEvent => ({
  type: 'MemberInvited', data: { orgId, memberId, email, role, inviteHash: `hash-${memberId}`, expiresAt, by: 'operator', at },
});
const joined = (memberId: string): MemberEvent => ({ type: 'MemberJoined', data: { orgId, memberId, at } });
const join = (memberId: string, wallNow = now, inviteHash = `hash-${memberId}`): MemberCommand => ({ type: 'Join', orgId, memberId, inviteHash, wallNow, now });
const remove = (memberId: string, by: string): MemberCommand => ({ type: 'Remove', orgId, memberId, by, now });

describe('members decider', () => {
  it('invites an address, lower-cased and trimmed', () => {
    given([]).when(invite('m1', '  Ann@Example.TEST ', 'owner')).then([invited('m1', 'ann@example.test', 'owner')]);
  });

  it('refuses an address that is not one, and one already a member or invited', () => {
    given([]).when(invite('m1', 'not an address')).then('invalid_argument');
    given([invited('m1', 'ann@example.test')]).when(invite('m2', 'ANN@example.test')).then('already_exists');
    given([invited('m1', 'ann@example.test'), joined('m1')]).when(invite('m2', 'ann@example.test')).then('already_exists');
  });

  it('lets an invitation be used once, with its own token, before it expires', () => {
    given([invited('m1', 'ann@example.test')]).when(join('m1')).then([joined('m1')]);
    given([invited('m1', 'ann@example.test'), joined('m1')]).when(join('m1')).then('not_found');
    given([invited('m1', 'ann@example.test')]).when(join('m1', now, 'hash-of-another-token')).then('not_found');
    given([invited('m1', 'ann@example.test')]).when(join('m1', new Date(expiresAt))).then({ code: 'invalid_state', message: 'This invitation has expired.' });
  });

  it('removes a member, but not oneself and not the last owner', () => {
    const team = [invited('o1', 'owner@example.test', 'owner'), joined('o1'), invited('m1', 'ann@example.test'), joined('m1')];
    given(team).when(remove('m1', 'o1')).then([{ type: 'MemberRemoved', data: { orgId, memberId: 'm1', by: 'o1', at } }]);
    given(team).when(remove('o1', 'o1')).then('invalid_argument');
    given(team).when(remove('o1', 'm1')).then({ code: 'invalid_state', message: 'An organization keeps at least one owner.' });
    given(team).when(remove('nobody', 'o1')).then('not_found');
  });
});
