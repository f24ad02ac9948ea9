// The reactor records deliveries as a batch per endpoint (deliveries.ts); they become rows, in
// the order recorded, before anything claims or lists them, once each, however many expand.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { createPool } from '../../src/db/pool.ts';
import { allMigrations } from '../../src/migrations.ts';
import { deliveryIdOf, expandBatches, listDeliveries, recordDeliveries, type NewDelivery } from '../../src/notify/webhooks/deliveries.ts';
import { createTestDatabase } from '../support/db.ts';

const at = new Date('2026-03-01T00:00:00.000Z');

function delivery(endpointId: string, eventId: string, videoId: string | null): NewDelivery {
  const eventType = videoId ? 'snapshot.created' : 'balance.low';
  return {
    deliveryId: deliveryIdOf(eventId, eventType, endpointId),
    endpointId,
    orgId: `org_of_${endpointId}`,
    eventId,
    eventType,
    videoId,
    body: JSON.stringify({ type: eventType, timestamp: at.toISOString(), data: { event: eventId, text: 'a "quoted" \\ line\nbreak' } }),
    createdAt: at,
  };
}

test('recorded batches become one row per delivery, in recording order per endpoint, whoever expands them', async (t) => {
  const db = await createTestDatabase();
  const others = Array.from({ length: 3 }, () => createPool(db.url, { applicationName: 'vidtrack-test' }));
  t.after(async () => {
    await Promise.all(others.map((pool) => pool.end()));
    await db.drop();
  });
  await migrate(db.pool, allMigrations);

  // Three pages, each with deliveries for two endpoints; video-1 in every page; one with no video.
  const pages = [0, 1, 2].map((page) => [
    delivery('wh_a', `e${page}-1`, 'video-1'),
    delivery('wh_b', `e${page}-1`, 'video-1'),
    delivery('wh_a', `e${page}-2`, `video-${page + 2}`),
    delivery('wh_a', `e${page}-3`, null),
  ]);
  for (const page of pages) await recordDeliveries(db.pool, page);
  // The first page read again (a crash before the checkpoint moved): nothing recorded twice.
  await recordDeliveries(db.pool, pages[0]!);

  // Listing one endpoint expands only its batches.
  const listedB = await listDeliveries(db.pool, 'wh_b', null, 10);
  assert.deepEqual(listedB.map((d) => d.event_id), ['e2-1', 'e1-1', 'e0-1']);
  const { rows: left } = await db.pool.query<{ endpoint_id: string }>(`SELECT DISTINCT endpoint_id FROM webhooks.delivery_batches`);
  assert.deepEqual(left, [{ endpoint_id: 'wh_a' }]);

  await Promise.all(others.map((pool) => expandBatches(pool)));
  const { rows } = await db.pool.query<{ event_id: string; video_id: string | null; org_id: string; body: string; status: string; created_at: Date; next_attempt_at: Date }>(
    `SELECT event_id, video_id, org_id, body, status, created_at, next_attempt_at FROM webhooks.deliveries WHERE endpoint_id = 'wh_a' ORDER BY seq`,
  );
  const expected = pages.flat().filter((d) => d.endpointId === 'wh_a');
  assert.deepEqual(
    rows.map((r) => [r.event_id, r.video_id, r.org_id, r.body, r.status, r.created_at.toISOString(), r.next_attempt_at.toISOString()]),
    expected.map((d) => [d.eventId, d.videoId, d.orgId, d.body, 'pending', at.toISOString(), at.toISOString()]),
  );
  const { rows: batches } = await db.pool.query(`SELECT 1 FROM webhooks.delivery_batches`);
  assert.equal(batches.length, 0);
});

test('a delivery field with a line break is refused before anything is written', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  await assert.rejects(recordDeliveries(db.pool, [{ ...delivery('wh_a', 'e1', 'video-1'), videoId: 'video\n1' }]), /line break/);
  await expandBatches(db.pool);
  const { rows } = await db.pool.query(`SELECT 1 FROM webhooks.deliveries`);
  assert.equal(rows.length, 0);
});

test('the deliveries list is newest first past the ninth delivery, and a walk by cursor sees each once', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  await migrate(db.pool, allMigrations);
  // One page each, as a quiet service records them: seq 1 to 23.
  const recorded = Array.from({ length: 23 }, (_, i) => delivery('wh_a', `e${i + 1}`, 'video-1'));
  for (const d of recorded) await recordDeliveries(db.pool, [d]);
  const walked: string[] = [];
  let before: bigint | null = null;
  for (let pages = 0; pages < 10; pages++) {
    const page = await listDeliveries(db.pool, 'wh_a', before, 5);
    walked.push(...page.map((d) => d.event_id));
    if (page.length < 5) break;
    before = BigInt(page[page.length - 1]!.seq);
  }
  assert.deepEqual(walked, recorded.map((d) => d.eventId).reverse());
});
