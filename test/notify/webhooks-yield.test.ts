// Collection comes first (src/collect/activity.ts): while a sweep runs in the process, the
// webhook dispatcher starts no send; the sweep over, what waited goes out.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { CollectionActivity } from '../../src/collect/activity.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { allMigrations } from '../../src/migrations.ts';
import { deliveryIdOf, listDeliveries, recordDeliveries } from '../../src/notify/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { newWebhookSecret, SecretBox } from '../../src/notify/webhooks/secret-box.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import { webhooksProjection } from '../../projections/webhooks.ts';
import { createTestDatabase } from '../support/db.ts';
import { within } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

/** A database with one endpoint on a real receiver and one delivery recorded for it, and a collection sweep held open. */
async function setUp(t: TestContext) {
  // Undone last first, also when the test fails: the dispatcher stops before the database goes.
  const cleanups: Array<() => unknown> = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  const receiver = await new WebhookReceiver().start();
  cleanups.push(() => receiver.stop());
  await migrate(db.pool, allMigrations);
  await db.pool.query(webhooksProjection.ddl(READ_SCHEMA));
  const box = SecretBox.fromKey(randomBytes(32));
  const secret = newWebhookSecret();
  receiver.expect('/hook', secret);
  await db.pool.query(
    `INSERT INTO ${READ_SCHEMA}.webhook_endpoints (endpoint_id, org_id, mode, url, events, sealed_secret, created_at, updated_at, created_commit, created_prepare)
     VALUES ('wh_yield', 'org_yield', 'live', $1, ARRAY['snapshot.created'], $2, now(), now(), 0, 0)`,
    [`${receiver.url}/hook`, box.seal(secret)],
  );
  const clock = new ManualClock('2026-03-01T00:00:00.000Z');
  const body = JSON.stringify({ type: 'snapshot.created', timestamp: clock.now().toISOString(), data: {} });
  const deliveryId = deliveryIdOf('event-1', 'snapshot.created', 'wh_yield');
  await recordDeliveries(db.pool, [{ deliveryId, endpointId: 'wh_yield', orgId: 'org_yield', eventId: 'event-1', eventType: 'snapshot.created', videoId: 'video-1', body, createdAt: clock.now() }]);

  const activity = new CollectionActivity();
  let endSweep!: () => void;
  const sweep = activity.during(() => new Promise<void>((resolve) => (endSweep = resolve)));
  // A test that fails must not leave the sweep (and so the dispatcher) waiting.
  cleanups.push(() => endSweep());
  let asked!: () => void;
  const askedDuringSweep = new Promise<void>((resolve) => (asked = resolve));
  const errors: unknown[] = [];
  const dispatcherFor = (maxYieldMs: number) => {
    const dispatcher = new WebhookDispatcher({
      pool: db.pool,
      store: {} as EventStore, // nothing here disables an endpoint
      clock,
      wall: systemClock,
      timeScale: 1,
      box,
      policy: { allowHttpHosts: ['127.0.0.1'], allowPrivate: true },
      onError: (error) => errors.push(error),
      collecting: {
        idle: () => {
          asked();
          return activity.idle();
        },
        get busy() {
          return activity.busy;
        },
      },
      maxYieldMs,
    });
    cleanups.push(() => dispatcher.stop(5_000));
    return dispatcher;
  };
  return { db, receiver, deliveryId, sweep, endSweep: () => endSweep(), askedDuringSweep, errors, dispatcherFor };
}

test('no webhook send starts while a collection sweep runs; once it ends, the delivery goes', async (t) => {
  const { db, receiver, deliveryId, sweep, endSweep, askedDuringSweep, errors, dispatcherFor } = await setUp(t);
  const dispatcher = dispatcherFor(600_000);
  dispatcher.kick();
  await within('the dispatcher to ask whether a sweep runs', askedDuringSweep, 10_000);
  const listed = await listDeliveries(db.pool, 'wh_yield', null, 10);
  assert.deepEqual(listed.map((d) => [d.delivery_id, d.status, d.attempts]), [[deliveryId, 'pending', 0]], 'not claimed while the sweep runs');
  assert.equal(receiver.received.length, 0);

  endSweep();
  await sweep;
  const [got] = await receiver.waitFor('/hook', 1);
  assert.equal(got!.id, deliveryId);
  assert.deepEqual(got!.verifiedWith, [true]);
  await dispatcher.idle();
  assert.deepEqual(errors, []);
});

test('a sweep that goes on and on holds a send back only so long', async (t) => {
  const { receiver, deliveryId, askedDuringSweep, errors, dispatcherFor } = await setUp(t);
  const dispatcher = dispatcherFor(50);
  dispatcher.kick();
  await within('the dispatcher to ask whether a sweep runs', askedDuringSweep, 10_000);
  // The sweep is never ended: the delivery goes all the same.
  const [got] = await receiver.waitFor('/hook', 1);
  assert.equal(got!.id, deliveryId);
  assert.deepEqual(errors, []);
});
