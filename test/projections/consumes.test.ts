// Each projection declares the event types its `apply` reads (`consumes`), and a rebuild in the
// log's own database hands it only those (projections/replay.ts): a type it reads but does not
// declare would be missed there. So every other type, given to `apply`, must change nothing:
// it sends no statement at all.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PoolClient } from 'pg';
import { projections } from '../../projections/index.ts';
import type { LoggedEvent } from '../../projections/projection.ts';
import type { DomainEventType } from '../../src/domain/events.ts';
import { createTestDatabase } from '../support/db.ts';

/** Every type of DomainEvent: the compiler refuses this object when one is missing or unknown. */
const EVERY_EVENT_TYPE: Record<DomainEventType, true> = {
  OrganizationOpened: true, ApiKeyIssued: true, ApiKeyRevoked: true, FundsDeposited: true, UsageCharged: true, LowBalanceThresholdSet: true,
  VideoTracked: true, SnapshotRecorded: true, CollectionFailed: true, VideoErrored: true, VideoPaused: true, VideoResumed: true,
  VideoCompleted: true, VideoCancelled: true, TrackingClaimed: true, TrackingReleased: true,
  MemberInvited: true, MemberJoined: true, MemberRemoved: true,
  WebhookEndpointCreated: true, WebhookEndpointUpdated: true, WebhookEndpointDisabled: true, WebhookEndpointDeleted: true,
  WebhookSecretRotated: true, WebhookTestRequested: true, MetricAlertCreated: true, MetricAlertDeleted: true,
};

/** An event of `type` on a video's stream, with every id a projection might key on. */
function eventOf(type: string, revision: number): LoggedEvent {
  const at = '2026-03-01T00:00:00.000Z';
  return {
    id: `event-${revision}`,
    streamId: 'video-v1',
    revision: BigInt(revision),
    position: { commit: 1n, prepare: BigInt(revision) },
    type,
    data: { videoId: 'v1', orgId: 'o1', keyId: 'k1', memberId: 'm1', endpointId: 'e1', alertId: 'a1', mode: 'live', at, amount: 1, price: 1, slot: 0 },
    metadata: {},
    recordedAt: new Date(at),
  } as unknown as LoggedEvent;
}

test('a projection sends no statement for an event type it does not declare in `consumes`', async (t) => {
  const db = await createTestDatabase();
  t.after(() => db.drop());
  const client = await db.pool.connect();
  t.after(() => client.release());
  await client.query('CREATE SCHEMA consumes_check');
  for (const projection of projections) await client.query(projection.ddl('consumes_check'));

  const statements: string[] = [];
  const watched = new Proxy(client, {
    get(target, key, receiver) {
      if (key !== 'query') return Reflect.get(target, key, receiver);
      return (text: unknown, ...rest: unknown[]) => {
        statements.push(String((text as { text?: string }).text ?? text));
        return (target.query as (...args: unknown[]) => unknown)(text, ...rest);
      };
    },
  }) as PoolClient;

  for (const projection of projections) {
    const others = (Object.keys(EVERY_EVENT_TYPE) as DomainEventType[]).filter((type) => !projection.consumes.includes(type));
    assert.ok(others.length > 0, `${projection.name} consumes every type?`);
    statements.length = 0;
    await projection.apply(watched, 'consumes_check', others.map((type, i) => eventOf(type, i + 1)));
    assert.deepEqual(statements, [], `${projection.name} read an event of a type it does not declare in consumes (${others.join(', ')})`);
  }
});
