// An owner of a new organization, signed in to the dashboard: the member made through the
// log's own commands, the session started as sign-in starts one.
import { systemClock } from '../../src/clock.ts';
import { inviteMember, joinMember } from '../../src/commands/member-commands.ts';
import { Sessions } from '../../src/dashboard/sessions.ts';
import { DashboardClient } from './dashboard-client.ts';
import type { TestService } from './service.ts';

export async function signedInOwner(service: TestService): Promise<{ orgId: string; memberId: string; client: DashboardClient }> {
  const { orgId } = await service.organization();
  const invited = await inviteMember(service.store, service.clock, systemClock, { orgId, email: `owner-${orgId}@example.test`, role: 'owner', by: 'operator' });
  await joinMember(service.store, service.clock, systemClock, { orgId, memberId: invited.memberId, token: invited.token });
  await service.settle();
  return { orgId, memberId: invited.memberId, client: new DashboardClient(service.app, { session: await new Sessions(service.db.pool, systemClock).start(invited.memberId) }) };
}
