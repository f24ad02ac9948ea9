// Sessions and per-key counters on the real database: a session ends after 12 idle hours,
// after 7 days whatever its use, at sign-out, and when its member is removed; key counts
// reach the table in one statement per flush, and a failed flush loses nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Pool } from 'pg';
import { ManualClock } from '../../src/clock.ts';
import { inviteMember, joinMember, removeMember } from '../../src/commands/member-commands.ts';
import { KeyUsageCounter } from '../../src/dashboard/key-usage.ts';
import { ABSOLUTE_MS, IDLE_MS, Sessions } from '../../src/dashboard/sessions.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

const HOUR = 3_600_000;

async function member(wall: ManualClock, role: 'owner' | 'member' = 'owner', orgId?: string) {
  const org = orgId ?? (await service.organization()).orgId;
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.test`;
  const invited = await inviteMember(service.store, service.clock, wall, { orgId: org, email, role, by: 'operator' });
  await joinMember(service.store, service.clock, wall, { orgId: org, memberId: invited.memberId, token: invited.token });
  await service.settle();
  return { orgId: org, memberId: invited.memberId };
}

describe('dashboard sessions', () => {
  it('end after 12 idle hours, but not while in use', async () => {
    const wall = new ManualClock('2026-11-01T00:00:00.000Z');
    const sessions = new Sessions(service.db.pool, wall);
    const { memberId } = await member(wall);
    const id = await sessions.start(memberId);
    for (let i = 0; i < 3; i++) {
      wall.advance(IDLE_MS - HOUR);
      assert.equal((await sessions.lookup(id))?.memberId, memberId, `in use after ${i + 1} long pauses`);
    }
    wall.advance(IDLE_MS + 1);
    assert.equal(await sessions.lookup(id), null);
  });

  it('end 7 days after sign-in however much they are used', async () => {
    const wall = new ManualClock('2026-11-01T00:00:00.000Z');
    const sessions = new Sessions(service.db.pool, wall);
    const { memberId } = await member(wall);
    const id = await sessions.start(memberId);
    let used = 0;
    while (used + 6 * HOUR < ABSOLUTE_MS) {
      wall.advance(6 * HOUR);
      used += 6 * HOUR;
      assert.ok(await sessions.lookup(id), `alive after ${used / HOUR} h`);
    }
    wall.advance(ABSOLUTE_MS - used + 1);
    assert.equal(await sessions.lookup(id), null);
  });

  it('end at sign-out and when the member is removed; an unknown id opens nothing', async () => {
    const wall = new ManualClock('2026-11-01T00:00:00.000Z');
    const sessions = new Sessions(service.db.pool, wall);
    const owner = await member(wall);
    const colleague = await member(wall, 'member', owner.orgId);
    const mine = await sessions.start(owner.memberId);
    const theirs = [await sessions.start(colleague.memberId), await sessions.start(colleague.memberId)];
    await sessions.end(mine);
    assert.equal(await sessions.lookup(mine), null);
    // Removal in the log alone ends them (the session lookup follows the member's status)...
    await removeMember(service.store, service.clock, { orgId: owner.orgId, memberId: colleague.memberId, by: owner.memberId });
    await service.settle();
    for (const id of theirs) assert.equal(await sessions.lookup(id), null);
    assert.equal(await sessions.lookup('not-a-session'), null);
    assert.equal(await sessions.lookup('x'.repeat(10_000)), null);
    const { rows } = await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.sessions WHERE id_hash = $1 OR id_hash = $2`, [mine, theirs[0]]);
    assert.equal(rows[0].n, 0, 'the table holds hashes, not the ids');
  });

  it("a sign-in deletes the member's ended and timed-out sessions, not live ones nor others'", async () => {
    const wall = new ManualClock('2026-11-01T00:00:00.000Z');
    const sessions = new Sessions(service.db.pool, wall);
    const owner = await member(wall);
    const colleague = await member(wall, 'member', owner.orgId);
    const rowsOf = async (memberId: string) =>
      (await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.sessions WHERE member_id = $1`, [memberId])).rows[0].n as number;
    const signedOut = await sessions.start(owner.memberId);
    await sessions.end(signedOut);
    const idle = await sessions.start(owner.memberId);
    const theirs = await sessions.start(colleague.memberId);
    await sessions.end(theirs);
    wall.advance(IDLE_MS - HOUR);
    const live = await sessions.start(owner.memberId);
    assert.equal(await rowsOf(owner.memberId), 2, 'the signed-out session is gone; the idle one is not dead yet');
    wall.advance(2 * HOUR);
    assert.ok(await sessions.lookup(live), 'the live session is used');
    const latest = await sessions.start(owner.memberId);
    assert.equal(await sessions.lookup(idle), null);
    assert.equal(await rowsOf(owner.memberId), 2, 'the session idle for 12 hours is gone');
    for (const id of [live, latest]) assert.equal((await sessions.lookup(id))?.memberId, owner.memberId);
    assert.equal(await rowsOf(colleague.memberId), 1, "another member's ended session waits for their own sign-in");
  });
});

describe('key usage counters', () => {
  it('reach the table in one statement per flush, summed across flushes', async () => {
    let statements = 0;
    const pool = { query: (...args: Parameters<Pool['query']>) => (statements++, (service.db.pool.query as (...a: unknown[]) => unknown)(...args)) } as unknown as Pool;
    const counter = new KeyUsageCounter(pool, service.clock, (error) => assert.fail(String(error)));
    for (let i = 0; i < 500; i++) counter.count('key_a');
    for (let i = 0; i < 20; i++) counter.count('key_b');
    await counter.flush();
    assert.equal(statements, 1);
    counter.count('key_a');
    await counter.flush();
    await counter.flush();
    assert.equal(statements, 2, 'an empty flush writes nothing');
    const { rows } = await service.db.pool.query(`SELECT key_id, requests::int, last_used_at FROM dashboard.key_usage WHERE key_id IN ('key_a', 'key_b') ORDER BY key_id`);
    assert.deepEqual(rows.map((r) => [r.key_id, r.requests]), [['key_a', 501], ['key_b', 20]]);
    assert.equal(rows[0].last_used_at.getTime(), service.clock.now().getTime());
  });

  it('keep their counts through a failed flush', async () => {
    let fail = true;
    const errors: unknown[] = [];
    const pool = {
      query: (...args: Parameters<Pool['query']>) => {
        if (fail) return Promise.reject(new Error('connection terminated'));
        return (service.db.pool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as Pool;
    const counter = new KeyUsageCounter(pool, service.clock, (error) => errors.push(error));
    for (let i = 0; i < 7; i++) counter.count('key_c');
    await counter.flush();
    assert.equal(errors.length, 1);
    counter.count('key_c');
    fail = false;
    await counter.stop();
    const { rows } = await service.db.pool.query(`SELECT requests::int FROM dashboard.key_usage WHERE key_id = 'key_c'`);
    assert.equal(rows[0]?.requests, 8);
  });
});
