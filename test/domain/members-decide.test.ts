// The members decider: an invitation is for an address that is not a member, works once and only
// until it expires or the address is invited again (which replaces it: a lost or expired
// invitation can be sent anew); an organization keeps an owner; nobody removes themselves.
import assert from 'node:assert/strict';
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

  it('refuses an address that is not one, and one already a member', () => {
    given([]).when(invite('m1', 'not an address')).then('invalid_argument');
    given([invited('m1', 'ann@example.test'), joined('m1')]).when(invite('m2', 'ANN@example.test')).then({ code: 'already_exists', message: 'ann@example.test is already a member.' });
  });

  it('invites again an address whose invitation is unused, pending or expired: the new one replaces it, whose link stops working', () => {
    const removedBy = (memberId: string, by: string): MemberEvent => ({ type: 'MemberRemoved', data: { orgId, memberId, by, at } });
    // Pending (lost e-mail): the operator sends a new one, as owner this time.
    const again = given([invited('m1', 'ann@example.test')]).when(invite('m2', 'ANN@example.test', 'owner')).then([removedBy('m1', 'operator'), invited('m2', 'ann@example.test', 'owner')]);
    given([invited('m1', 'ann@example.test'), removedBy('m1', 'operator'), invited('m2', 'ann@example.test', 'owner')]).when(join('m1')).then('not_found');
    given([invited('m1', 'ann@example.test'), removedBy('m1', 'operator'), invited('m2', 'ann@example.test', 'owner')]).when(join('m2')).then([joined('m2')]);
    assert.equal(again.state.get('m1')?.status, 'removed');
    // Expired: its wall time has passed; the new invitation expires on its own date.
    const later = new Date(Date.parse(expiresAt) + 3_600_000);
    const renewed: MemberCommand = { type: 'Invite', orgId, memberId: 'm3', email: 'bob@example.test', role: 'member', inviteHash: 'hash-m3', expiresAt: new Date(later.getTime() + 7 * 24 * 3_600_000), by: 'o1', now: later };
    given([invited('m1', 'bob@example.test')]).when(join('m1', later)).then('invalid_state');
    given([invited('m1', 'bob@example.test')]).when(renewed).then([
      { type: 'MemberRemoved', data: { orgId, memberId: 'm1', by: 'o1', at: later.toISOString() } },
      { type: 'MemberInvited', data: { orgId, memberId: 'm3', email: 'bob@example.test', role: 'member', inviteHash: 'hash-m3', expiresAt: '2026-11-15T01:00:00.000Z', by: 'o1', at: later.toISOString() } },
    ]);
    // A removed member is invited as anyone else.
    given([invited('m1', 'ann@example.test'), joined('m1'), removedBy('m1', 'o1')]).when(invite('m2', 'ann@example.test')).then([invited('m2', 'ann@example.test')]);
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
