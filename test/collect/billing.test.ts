// Charging, pausing when the money runs out, and resuming after a deposit.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DAY_MS, HOUR_MS } from '../../src/clock.ts';
import { leaseOrganizations, releaseOrganizations } from '../../src/collect/leases.ts';
import { chargeUsage, collectDue, completeEnded, resumeFunded } from '../../src/collect/work.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { stopVideo } from '../../src/commands/video-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { collectHours, eventsOf, getUsage, getVideo, recordedSlots, track, youtubeLink } from './rounds.ts';
import { collectorsCalling } from '../support/collectors.ts';

let service: TestService;
beforeEach(async () => {
  service = await startTestService();
});
afterEach(() => service.close());

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('chargeUsage', () => {
  it('charges exactly the live snapshots not yet charged, in integer micro-USD, once', async () => {
    const org = await service.organization({ usd: '1' });
    const id = await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 10, () => collectDue(service.work)); // slots 0..10

    await chargeUsage(service.work);
    let charges = await eventsOf(service, 'UsageCharged');
    assert.equal(charges.length, 1);
    assert.equal(charges[0]!.snapshots, 11);
    assert.equal(charges[0]!.amount, 165_000);
    let usage = await getUsage(service, org.liveKey);
    assert.equal(usage.balance_usd, 0.835);
    assert.equal(usage.uncharged_usage_usd, 0);
    assert.equal(usage.total_charged_usd, 0.165);

    // Run again with nothing new: nothing is charged twice.
    await chargeUsage(service.work);
    assert.equal((await eventsOf(service, 'UsageCharged')).length, 1);

    await collectHours(service, 13, () => collectDue(service.work)); // slots 11..23
    assert.equal((await getUsage(service, org.liveKey)).uncharged_usage_usd, 0.195);
    await chargeUsage(service.work);
    await chargeUsage(service.work);
    charges = await eventsOf(service, 'UsageCharged');
    assert.deepEqual(
      charges.map((c) => [c.snapshots, c.amount, c.snapshotsChargedTotal]),
      [
        [11, 165_000, 11],
        [13, 195_000, 24],
      ],
    );
    assert.equal((await recordedSlots(service, id)).length, 24);
    usage = await getUsage(service, org.liveKey);
    assert.equal(usage.balance_usd, 0.64);
    assert.equal(usage.total_charged_usd, 0.36);
    assert.equal(usage.uncharged_usage_usd, 0);
    assert.equal(usage.total_snapshots, 24);
  });

  it('two chargers at once still charge each snapshot once', async () => {
    const org = await service.organization({ usd: '1' });
    await track(service, org.liveKey, youtubeLink());
    await collectHours(service, 23, () => collectDue(service.work));
    await Promise.all([chargeUsage(service.work), chargeUsage({ ...service.work, holder: 'other' }), chargeUsage(service.work)]);
    const charges = await eventsOf(service, 'UsageCharged');
    assert.equal(charges.reduce((sum, c) => sum + c.amount, 0), 360_000);
    assert.equal((await getUsage(service, org.liveKey)).balance_usd, 0.64);
  });

  it('never charges test-mode videos', async () => {
    const org = await service.organization({ usd: '1' });
    const id = await track(service, org.testKey, youtubeLink());
    await collectHours(service, 23, () => collectDue(service.work));
    assert.equal((await recordedSlots(service, id)).length, 24);
    await chargeUsage(service.work);
    assert.equal((await eventsOf(service, 'UsageCharged')).length, 0);
    assert.ok((await eventsOf(service, 'SnapshotRecorded', id)).every((s) => s.price === 0 && s.mode === 'test'));
    const live = await getUsage(service, org.liveKey);
    assert.equal(live.balance_usd, 1);
    assert.equal(live.total_snapshots, 0);
    assert.equal(live.uncharged_usage_usd, 0);
    const test = await getUsage(service, org.testKey);
    assert.equal(test.total_snapshots, 24);
    assert.equal(test.total_charged_usd, 0);
  });

  it('a test-mode video keeps collecting when the live balance is empty', async () => {
    const org = await service.organization();
    const id = await track(service, org.testKey, youtubeLink());
    await collectHours(service, 3, () => collectDue(service.work));
    assert.deepEqual(await recordedSlots(service, id), [0, 1, 2, 3]);
    assert.equal((await getVideo(service, org.testKey, id)).status, 'monitoring');
  });
});

describe('pause and resume', () => {
  /**
   * 0.5 USD pays for 33 snapshots. Both tracks pass the 402 check (0.5 and then 0.485 against
   * 0.36); slot 0 of each leaves 0.47, two snapshots an hour leave 0.02 after hour 15, so in
   * hour 16 the first video takes the last snapshot and the second pauses; the first pauses in hour 17.
   */
  async function twoVideosOnHalfADollar() {
    const org = await service.organization({ usd: '0.5' });
    const started = service.clock.now().getTime();
    // Both are due at the same instants; on a tie the scheduler takes the smaller video id first.
    const [first, second] = [await track(service, org.liveKey, youtubeLink()), await track(service, org.liveKey, youtubeLink())].sort();
    for (let hour = 1; hour <= 18; hour++) {
      service.clock.set(new Date(started + hour * HOUR_MS));
      await collectDue(service.work);
      await chargeUsage(service.work);
      const usage = await getUsage(service, org.liveKey);
      assert.ok(usage.balance_usd >= 0, `balance ${usage.balance_usd} at hour ${hour}`);
      assert.ok(usage.total_charged_usd <= 0.5, `charged ${usage.total_charged_usd} at hour ${hour}`);
      assert.ok(usage.balance_usd - usage.uncharged_usage_usd >= 0, `available funds negative at hour ${hour}`);
    }
    return { org, started, first, second };
  }

  it('pauses the videos of an organization that cannot pay the next snapshot, without overdrawing', async () => {
    const { org, first, second } = await twoVideosOnHalfADollar();
    assert.deepEqual(await recordedSlots(service, first), range(0, 16));
    assert.deepEqual(await recordedSlots(service, second), range(0, 15));
    assert.equal((await getVideo(service, org.liveKey, first)).status, 'paused');
    assert.equal((await getVideo(service, org.liveKey, second)).status, 'paused');
    const usage = await getUsage(service, org.liveKey);
    assert.equal(usage.total_charged_usd, 0.495);
    assert.equal(usage.balance_usd, 0.005);
    assert.equal(usage.total_snapshots, 33);
    assert.equal(usage.active_videos, 0);

    // While paused: no snapshot, no charge, no second pause.
    await collectHours(service, 2, async () => {
      await collectDue(service.work);
      await resumeFunded(service.work);
      await chargeUsage(service.work);
    });
    assert.equal((await eventsOf(service, 'SnapshotRecorded')).length, 33);
    assert.equal((await eventsOf(service, 'UsageCharged')).reduce((sum, c) => sum + c.amount, 0), 495_000);
    assert.equal((await eventsOf(service, 'VideoPaused')).length, 2);
  });

  it('resumes after a deposit even when a scheduler died mid-append on that organization (its unrecorded spending is read from the log)', async () => {
    const { org, started, first } = await twoVideosOnHalfADollar();
    service.clock.set(new Date(started + 20 * HOUR_MS));
    // A scheduler marked a snapshot in flight, then died before the append: nothing landed.
    await service.db.pool.query(
      `UPDATE sched.org_leases SET holder = 'dead-scheduler', leased_until = now() - interval '1 minute', in_flight = $2 WHERE org_id = $1`,
      [org.orgId, JSON.stringify([[`video-${first}`, 'snapshot-that-never-landed']])],
    );
    await deposit(service.store, service.clock, org.orgId, parseUsd('1')!, 'top-up');
    await service.settle();
    assert.equal((await resumeFunded(service.work)).counts.get('VideoResumed'), 2);
    const { rows } = await service.db.pool.query(`SELECT in_flight FROM sched.org_leases WHERE org_id = $1`, [org.orgId]);
    assert.equal(rows[0].in_flight, null, 'the dead holder\'s mark is settled');
  });

  it('resumes after a deposit at the current slot; the hours missed while paused are skipped for good', async () => {
    const { org, started, first, second } = await twoVideosOnHalfADollar();
    service.clock.set(new Date(started + 20 * HOUR_MS));
    // Without money nothing resumes.
    assert.equal((await resumeFunded(service.work)).counts.size, 0);
    await deposit(service.store, service.clock, org.orgId, parseUsd('1')!, 'top-up');
    await service.settle();
    const resumed = await resumeFunded(service.work);
    assert.equal(resumed.counts.get('VideoResumed'), 2);
    assert.equal((await getVideo(service, org.liveKey, first)).status, 'monitoring');
    assert.equal((await getUsage(service, org.liveKey)).active_videos, 2);

    await collectDue(service.work); // slot 20, due now
    for (let hour = 21; hour <= 24; hour++) {
      service.clock.set(new Date(started + hour * HOUR_MS));
      await collectDue(service.work);
      await completeEnded(service.work);
    }
    assert.deepEqual(await recordedSlots(service, first), [...range(0, 16), ...range(20, 23)]);
    assert.deepEqual(await recordedSlots(service, second), [...range(0, 15), ...range(20, 23)]);
    assert.equal((await getVideo(service, org.liveKey, first)).status, 'completed');
    assert.equal((await getVideo(service, org.liveKey, second)).status, 'completed');

    await chargeUsage(service.work);
    const usage = await getUsage(service, org.liveKey);
    assert.equal(usage.total_snapshots, 41);
    assert.equal(usage.total_charged_usd, 0.615);
    assert.equal(usage.balance_usd, 0.885);
    assert.equal(usage.active_videos, 0);
  });

  it('a small deposit resumes only as many videos as it can pay for', async () => {
    const { org, started, first, second } = await twoVideosOnHalfADollar();
    service.clock.set(new Date(started + 19 * HOUR_MS));
    // 0.005 left + 0.01 = one snapshot.
    await deposit(service.store, service.clock, org.orgId, parseUsd('0.01')!, null);
    await service.settle();
    assert.equal((await resumeFunded(service.work)).counts.get('VideoResumed'), 1);
    await collectDue(service.work);
    service.clock.advance(HOUR_MS);
    await collectDue(service.work); // cannot pay slot 20: paused again
    await chargeUsage(service.work);
    const usage = await getUsage(service, org.liveKey);
    assert.equal(usage.total_snapshots, 34);
    assert.equal(usage.balance_usd, 0);
    const statuses = [(await getVideo(service, org.liveKey, first)).status, (await getVideo(service, org.liveKey, second)).status];
    assert.deepEqual(statuses, ['paused', 'paused']);
  });

  it('a snapshot decided but not written (the video was stopped while the platform was asked) is not spent: the other videos are collected, not paused', async () => {
    // 0.39 USD: three one-day tracks pass the 402 check; their slots 0 to 7 leave two snapshots' worth.
    const org = await service.organization({ usd: '0.39' });
    const videoOf = new Map<string, string>();
    for (let i = 0; i < 3; i++) {
      const link = youtubeLink();
      videoOf.set(new URL(link).searchParams.get('v')!, await track(service, org.liveKey, link));
    }
    await collectHours(service, 7, () => collectDue(service.work));
    await service.settle();
    const usage = await getUsage(service, org.liveKey);
    assert.equal(Math.round((usage.balance_usd - usage.uncharged_usage_usd) * 1e6), 30_000, 'two snapshots left to pay');

    // The client stops the first video of the sweep while the platform is asked for it: its
    // snapshot is decided, then refused (not_monitoring). Batches of one, so the other two videos
    // are decided after that batch's append is over.
    let stopped: string | undefined;
    const collectors = collectorsCalling(service.work.collectors, async (refs) => {
      if (stopped) return;
      stopped = videoOf.get(refs[0]!.platformId)!;
      await stopVideo(service.store, service.clock, stopped);
    });
    service.clock.advance(HOUR_MS);
    await collectDue({ ...service.work, collectors, batchSize: 1 });
    await service.settle();
    assert.ok(stopped);
    assert.deepEqual(await recordedSlots(service, stopped), range(0, 7), 'nothing written for the stopped video');
    for (const id of [...videoOf.values()].filter((id) => id !== stopped)) {
      assert.deepEqual(await recordedSlots(service, id), range(0, 8), `video ${id} is collected`);
      assert.equal((await getVideo(service, org.liveKey, id)).status, 'monitoring');
    }
    assert.equal((await eventsOf(service, 'VideoPaused')).length, 0);
  });

  it('an organization that never pays again does not hold back the resume of one that does', async () => {
    const orgs = [await service.organization({ usd: '0.75' }), await service.organization({ usd: '0.75' })];
    // The one that never pays sorts first: its paused videos come first in org_id order.
    const [abandoned, paying] = orgs.sort((a, b) => (a.orgId < b.orgId ? -1 : 1)) as [(typeof orgs)[0], (typeof orgs)[0]];
    for (const org of orgs) for (let i = 0; i < 27; i++) await track(service, org.liveKey, youtubeLink());
    service.clock.advance(HOUR_MS);
    await collectDue(service.work); // 0.345 USD left pays 23 of the 27 snapshots: 4 videos pause in each
    const paused = async (orgId: string) =>
      Number((await service.db.pool.query(`SELECT count(*) FROM rm.videos WHERE org_id = $1 AND status = 'paused'`, [orgId])).rows[0].count);
    assert.equal(await paused(abandoned.orgId), 4);
    assert.equal(await paused(paying.orgId), 4);
    await deposit(service.store, service.clock, paying.orgId, parseUsd('100')!, 'top-up');
    await service.settle();

    // A batch of 4 stands for the production 5,000: the abandoned organization's paused videos fill one.
    const resumed = await resumeFunded({ ...service.work, batchSize: 4 });
    assert.equal(resumed.counts.get('VideoResumed'), 4);
    assert.equal(await paused(paying.orgId), 0);
    assert.equal(await paused(abandoned.orgId), 4);
  });

  it('resume neither takes nor releases the lease of the collect round running beside it', async () => {
    const { org, started } = await twoVideosOnHalfADollar();
    service.clock.set(new Date(started + 20 * HOUR_MS));
    await deposit(service.store, service.clock, org.orgId, parseUsd('1')!, null);
    await service.settle();
    const { pool } = service.db;
    // This scheduler's collect round holds the organization at the moment.
    assert.deepEqual((await leaseOrganizations(pool, service.work.holder, [org.orgId], 10)).map((l) => l.orgId), [org.orgId]);
    assert.equal((await resumeFunded(service.work)).counts.size, 0, 'resumed under the collect round\'s lease');
    assert.deepEqual(await leaseOrganizations(pool, 'another-scheduler', [org.orgId], 10), [], 'the collect round lost its lease');
    await releaseOrganizations(pool, service.work.holder, [org.orgId]);
    assert.equal((await resumeFunded(service.work)).counts.get('VideoResumed'), 2);
  });

  it('a paused video whose period ends completes, with days_remaining 0', async () => {
    const { org, started, first, second } = await twoVideosOnHalfADollar();
    service.clock.set(new Date(started + DAY_MS - 1));
    assert.equal((await completeEnded(service.work)).counts.size, 0);
    service.clock.set(new Date(started + DAY_MS));
    assert.equal((await resumeFunded(service.work)).counts.size, 0);
    assert.equal((await completeEnded(service.work)).counts.get('VideoCompleted'), 2);
    for (const id of [first, second]) {
      const video = await getVideo(service, org.liveKey, id);
      assert.equal(video.status, 'completed');
      assert.equal(video.days_remaining, 0);
    }
    const completions = await eventsOf(service, 'VideoCompleted');
    assert.deepEqual(
      completions.map((c) => [c.previousStatus, c.reason]),
      [
        ['paused', 'period_ended'],
        ['paused', 'period_ended'],
      ],
    );
    // A deposit afterwards brings nothing back.
    await deposit(service.store, service.clock, org.orgId, parseUsd('5')!, null);
    await service.settle();
    assert.equal((await resumeFunded(service.work)).counts.size, 0);
  });
});
