// A sweep that loses an organization's lease mid-round (it ran out, and another scheduler took
// it) spends none of that organization's money afterwards: the snapshots it collected for it
// are not appended, the round goes on for everyone else, and the new holder collects them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { leaseOrganizations, markInFlight, releaseOrganizations, renewLeases } from '../../src/collect/leases.ts';
import { collectDue } from '../../src/collect/work.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { recordedSlots, track, youtubeLink } from './rounds.ts';
import { collectorsCalling } from '../support/collectors.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

describe('a lease lost during a sweep', () => {
  it('leaves that organization to the scheduler that took it over', async () => {
    const kept = await service.organization({ usd: '10' });
    const taken = await service.organization({ usd: '10' });
    const keptVideo = await track(service, kept.liveKey, youtubeLink());
    const takenVideo = await track(service, taken.liveKey, youtubeLink());
    await service.settle();

    // While this sweep asks the platform, another scheduler takes `taken` over.
    const collectors = collectorsCalling(service.work.collectors, () =>
      service.db.pool.query(`UPDATE sched.org_leases SET holder = 'another-scheduler', leased_until = now() + interval '1 hour' WHERE org_id = $1`, [taken.orgId]),
    );
    service.clock.advance(HOUR_MS);
    await collectDue({ ...service.work, collectors });
    await service.settle();
    assert.deepEqual(await recordedSlots(service, keptVideo), [0, 1], 'the organization still held is collected');
    assert.deepEqual(await recordedSlots(service, takenVideo), [0], 'nothing is appended for the organization taken over');
    const { rows } = await service.db.pool.query(`SELECT holder, in_flight FROM sched.org_leases WHERE org_id = $1`, [taken.orgId]);
    assert.deepEqual(rows[0], { holder: 'another-scheduler', in_flight: null }, "the new holder's lease row is left as it was");

    // Its lease runs out: the next sweep collects the slot.
    await service.db.pool.query(`UPDATE sched.org_leases SET leased_until = '-infinity' WHERE org_id = $1`, [taken.orgId]);
    await collectDue(service.work);
    await service.settle();
    assert.deepEqual(await recordedSlots(service, takenVideo), [0, 1]);
  });

  it('is renewed when an append is marked, so nobody takes it while the append is under way', async () => {
    const { orgId } = await service.organization({ usd: '10' });
    assert.equal((await leaseOrganizations(service.db.pool, 'scheduler-a', [orgId], 10)).length, 1);
    // The platforms took longer than the lease: it ran out, and nobody has taken it yet.
    await service.db.pool.query(`UPDATE sched.org_leases SET leased_until = now() - interval '1 second' WHERE org_id = $1`, [orgId]);
    const marked = await markInFlight(service.db.pool, 'scheduler-a', new Map([[orgId, [['video-x', 'snapshot-x']]]]));
    assert.deepEqual([...marked], [orgId]);
    assert.deepEqual(await leaseOrganizations(service.db.pool, 'scheduler-b', [orgId], 10), [], 'taken during the append');
  });

  it('is not taken back by a renewal once another scheduler took it, spent and let it go', async () => {
    const { orgId } = await service.organization({ usd: '10' });
    const pool = service.db.pool;
    await leaseOrganizations(pool, 'scheduler-a', [orgId], 10);
    await pool.query(`UPDATE sched.org_leases SET leased_until = now() - interval '1 second' WHERE org_id = $1`, [orgId]);
    assert.equal((await leaseOrganizations(pool, 'scheduler-b', [orgId], 10)).length, 1);
    await markInFlight(pool, 'scheduler-b', new Map([[orgId, [['video-b', 'snapshot-b']]]]));
    await releaseOrganizations(pool, 'scheduler-b', [orgId]);
    assert.deepEqual([...(await renewLeases(pool, 'scheduler-a', [orgId]))], [], 'lost: only a take settles what scheduler-b spent');
    const { rows } = await pool.query(`SELECT holder, in_flight FROM sched.org_leases WHERE org_id = $1`, [orgId]);
    assert.deepEqual(rows[0], { holder: 'scheduler-b', in_flight: [['video-b', 'snapshot-b']] });
    // Held without a break, a lease is renewed, even one that ran out meanwhile.
    const [taken] = await leaseOrganizations(pool, 'scheduler-a', [orgId], 10);
    assert.deepEqual(taken!.inFlight, [['video-b', 'snapshot-b']], "a take hands over scheduler-b's marks to settle");
    await pool.query(`UPDATE sched.org_leases SET leased_until = now() - interval '1 second' WHERE org_id = $1`, [orgId]);
    assert.deepEqual([...(await renewLeases(pool, 'scheduler-a', [orgId]))], [orgId]);
  });
});
