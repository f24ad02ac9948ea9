// The claim meets rows other transactions hold: a sender whose claim lapsed may be marking its
// delivery late, while the dispatcher writes its own marks and claims in one transaction
// (deliveries.ts). That transaction holds the endpoint's health row from its marks, and the late
// mark wants it next: a claim that waited for the held delivery would deadlock with it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/migrations.ts';
import { claimDue, deliveryIdOf, expandBatches, recordDeliveries } from '../../src/notify/webhooks/deliveries.ts';
import { webhooksProjection } from '../../projections/webhooks.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import { createTestDatabase } from '../support/db.ts';
import { within } from '../support/wait.ts';

const at = new Date('2026-03-01T00:00:00.000Z');

test('a claim leaves a delivery another transaction holds to a later claim, and a late mark of it completes', async (t) => {
  const db = await createTestDatabase();
  const late = await db.pool.connect();
  t.after(async () => {
    await late.query('ROLLBACK').catch(() => undefined);
    late.release();
    await db.drop();
  });
  await migrate(db.pool, allMigrations);
  await db.pool.query(webhooksProjection.ddl(READ_SCHEMA));
  const ids = ['e1', 'e2', 'e3'].map((eventId) => deliveryIdOf(eventId, 'snapshot.created', 'wh_x'));
  await recordDeliveries(
    db.pool,
    ids.map((deliveryId, i) => ({ deliveryId, endpointId: 'wh_x', orgId: 'org_x', eventId: `e${i + 1}`, eventType: 'snapshot.created', videoId: `video-${i + 1}`, body: '{}', createdAt: at })),
  );
  await expandBatches(db.pool);
  const later = new Date(at.getTime() + 60_000);

  const { claimed: [first, second] } = await claimDue(db.pool, later, 2);
  assert.deepEqual([first?.delivery_id, second?.delivery_id], ids.slice(0, 2));
  // The second's sender is slow: its claim lapses, and its mark has begun (the row is held).
  await db.pool.query(`UPDATE webhooks.deliveries SET claimed_until = now() - interval '1 second' WHERE delivery_id = $1`, [second!.delivery_id]);
  await late.query('BEGIN');
  await late.query(`UPDATE webhooks.deliveries SET status = 'delivered', claimed_until = NULL, claim_token = NULL WHERE delivery_id = $1 AND claim_token = $2`, [
    second!.delivery_id,
    second!.claim_token,
  ]);

  // The dispatcher marks the first delivered and claims in the same transaction: the held one is left.
  const { claimed, marked } = await within(
    'a claim beside a delivery another transaction holds',
    claimDue(db.pool, later, 10, [{ claimed: first!, end: { status: 'delivered', httpStatus: 204, error: null, nextAttemptAt: null, at: later, receiverCalled: true } }]),
    10_000,
  );
  assert.deepEqual(claimed.map((d) => d.delivery_id), [ids[2]]);
  assert.equal(marked.get(first!.delivery_id)?.marked, true);

  // The late mark goes on to the endpoint's health row, which the claim's transaction wrote.
  await within(
    'the late mark',
    late.query(
      `INSERT INTO webhooks.endpoint_health (endpoint_id, last_success_at) VALUES ('wh_x', $1)
       ON CONFLICT (endpoint_id) DO UPDATE SET last_success_at = greatest(webhooks.endpoint_health.last_success_at, excluded.last_success_at)`,
      [later],
    ),
    10_000,
  );
  await late.query('COMMIT');
  const { rows } = await db.pool.query<{ delivery_id: string; status: string; claimed: boolean }>(
    `SELECT delivery_id, status, claim_token IS NOT NULL AS claimed FROM webhooks.deliveries ORDER BY seq`,
  );
  assert.deepEqual(
    rows.map((r) => [r.delivery_id, r.status, r.claimed]),
    [
      [ids[0], 'delivered', false],
      [ids[1], 'delivered', false],
      [ids[2], 'pending', true],
    ],
  );
});

test("an endpoint with nothing in flight gets a place first: another organization's delivery is not left behind an older backlog", async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  await db.pool.query(webhooksProjection.ddl(READ_SCHEMA));
  // Three endpoints of one organization with 10 deliveries each, all older than one delivery to
  // another organization's endpoint.
  const backlog = ['wh_a1', 'wh_a2', 'wh_a3'].flatMap((endpointId) =>
    Array.from({ length: 10 }, (_, i) => ({ endpointId, orgId: 'org_a', eventId: `${endpointId}-e${i}`, videoId: `${endpointId}-v${i}` })),
  );
  const deliveries = [...backlog, { endpointId: 'wh_b', orgId: 'org_b', eventId: 'b-e0', videoId: 'b-v0' }].map((d) => ({
    ...d,
    deliveryId: deliveryIdOf(d.eventId, 'snapshot.created', d.endpointId),
    eventType: 'snapshot.created',
    body: '{}',
    createdAt: at,
  }));
  for (const delivery of deliveries) {
    await recordDeliveries(db.pool, [delivery]);
    await expandBatches(db.pool);
  }
  const { claimed } = await claimDue(db.pool, new Date(at.getTime() + 60_000), 4);
  assert.deepEqual(claimed.map((c) => c.endpoint_id).sort(), ['wh_a1', 'wh_a2', 'wh_a3', 'wh_b']);
});
