// What the pages ask of the dashboard (pages/model.ts), done with the service's commands and
// the dashboard's reads: keys through the account commands, members through the members
// stream, each answer given once the read models show the change.
import type { ApiDeps } from '../api/context.ts';
import { awaitProjection } from '../api/context.ts';
import { issueKey, revokeKey } from '../commands/account-commands.ts';
import { inviteMember, removeMember } from '../commands/member-commands.ts';
import type { Clock } from '../clock.ts';
import { DomainError } from '../domain/errors.ts';
import type { MailOptions } from '../notify/mailer.ts';
import { inviteUrl, sendInvitation } from './invitations.ts';
import type { DashboardCommands } from './pages/model.ts';
import { isActiveKeyOf, listKeys, listMembers, organizationName } from './reads.ts';
import type { Sessions } from './sessions.ts';

export interface DashboardOptions {
  /** Real time, for sessions and invitations (TIME_SCALE speeds up only the service's clock). */
  wall: Clock;
  mail: MailOptions;
  /** Where people reach the dashboard (PUBLIC_URL, else the address the API listens on), for invitation links. */
  baseUrl(): string;
  onError(error: unknown, what: string): void;
}

export function dashboardCommands(deps: ApiDeps, options: DashboardOptions, sessions: Sessions): DashboardCommands {
  const { pool, store, clock } = deps;
  return {
    orgName: async (orgId) => (await organizationName(pool, orgId)) ?? orgId,
    listKeys: (orgId) => listKeys(pool, orgId),
    async createKey(orgId, { name, mode, by }) {
      const issued = await issueKey(store, clock, { orgId, name, mode, issuedBy: by.memberId });
      await awaitProjection(deps, issued.position);
      return { keyId: issued.keyId, apiKey: issued.apiKey };
    },
    async deleteKey(orgId, keyId) {
      if (!(await isActiveKeyOf(pool, orgId, keyId))) return 'not_found';
      const revoked = await revokeKey(store, clock, orgId, keyId);
      await awaitProjection(deps, revoked.position);
      return 'deleted';
    },
    listMembers: (orgId) => listMembers(pool, orgId),
    async inviteMember(orgId, { email, role, by }) {
      try {
        const invited = await inviteMember(store, clock, options.wall, { orgId, email, role, by: by.memberId });
        await awaitProjection(deps, invited.position);
        const url = inviteUrl(options.baseUrl(), invited.token);
        try {
          await sendInvitation(options.mail, { memberId: invited.memberId, email: invited.email, orgName: (await organizationName(pool, orgId)) ?? orgId, url });
        } catch (error) {
          options.onError(error, 'invitation e-mail');
          return { ok: true, inviteUrl: url, mailed: false };
        }
        return { ok: true, inviteUrl: url, mailed: true };
      } catch (error) {
        if (error instanceof DomainError) return { ok: false, error: error.message };
        throw error;
      }
    },
    async removeMember(orgId, memberId, by) {
      try {
        const removed = await removeMember(store, clock, { orgId, memberId, by: by.memberId });
        await sessions.endAllOf(memberId);
        await awaitProjection(deps, removed.position);
        return { ok: true };
      } catch (error) {
        if (error instanceof DomainError) return { ok: false, error: error.message };
        throw error;
      }
    },
  };
}
