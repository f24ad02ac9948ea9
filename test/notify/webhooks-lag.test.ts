// Webhook targets while the projector lags the log: the reactor decides who gets a page's events
// only once the read models hold every change of endpoints before them, so an endpoint created
// just before an event gets it (at least once), on the event's page or on one before, and one
// disabled just before does not. The lag is real: a transaction holds
// the endpoints table, so the projector cannot apply its page until the test lets it. And
// however late the reactor reads an event, an endpoint created after it does not get it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { comparePositions, type Position } from '../../src/eventstore/port.ts';
import { newestCommittedOn } from '../../src/eventstore/postgres.ts';
import { readCheckpoint } from '../../src/notify/checkpoint.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import { API, client, expectStatus, tracked } from '../api/helpers.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet, withReactorBehind } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

/**
 * Runs `append` as the projector lags: its events reach the log's readers together, on one page
 * (a transaction of the service's stays open meanwhile, and readers see nothing committed after
 * it began until it ends, as with events close together), and the projector cannot apply that
 * page (a transaction holds the endpoints table; reads go on). Returns once the reactor has
 * either moved its checkpoint past the page (it decided without the projector) or asked the
 * read models to reach the page (it waits for the projector); then lets the projector go.
 * Everything is let go also on failure.
 */
async function whileProjectorLags<T>(append: () => Promise<T>, options: { pageBefore?: () => Promise<void> } = {}): Promise<T> {
  const { pool } = fixture.service.db;
  const watcher = fixture.service.watcher;
  const waitFor = watcher.waitFor;
  const holder = await pool.connect();
  const horizon = await pool.connect();
  try {
    // With a page before, the projector is held at the very start of its transaction (reading
    // its checkpoints FOR UPDATE), before it takes a transaction id: one would hide from every
    // reader of the log the events appended after it, so the reactor could not read ahead.
    const held = options.pageBefore ? 'checkpoints' : 'webhook_endpoints';
    await holder.query(`BEGIN; LOCK TABLE ${READ_SCHEMA}.${held} IN EXCLUSIVE MODE`);
    if (options.pageBefore) {
      // A page of its own, which the reactor passes before the events after it are appended.
      await options.pageBefore();
      const newest = (await newestCommittedOn(pool))!;
      await until('the webhook reactor to pass the page before', async () => {
        const passed = await readCheckpoint(pool, 'webhooks.checkpoint');
        return passed && comparePositions(passed, newest) >= 0 ? true : undefined;
      }, 10_000, 10);
    }
    const before = (await newestCommittedOn(pool))!;
    await horizon.query('BEGIN; SELECT pg_current_xact_id()');
    // Each request is answered once its read-your-writes wait gives up; its events are in the log.
    const result = await append();
    // From here the reactor is the one asking (the API's waits are over): the watcher works as before.
    const asked: Position[] = [];
    watcher.waitFor = (target, timeoutMs) => {
      if (target) asked.push(target);
      return waitFor.call(watcher, target, timeoutMs);
    };
    await horizon.query('COMMIT');
    const newest = (await newestCommittedOn(pool))!;
    await until('the webhook reactor to pass the page, or to wait for the read models to reach it', async () => {
      const passed = await readCheckpoint(pool, 'webhooks.checkpoint');
      if (passed && comparePositions(passed, newest) >= 0) return true;
      return asked.some((p) => comparePositions(p, before) > 0) ? true : undefined;
    }, 10_000, 10);
    return result;
  } finally {
    watcher.waitFor = waitFor;
    await horizon.query('ROLLBACK').catch(() => undefined);
    horizon.release();
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
}

describe('webhook targets while the read models lag the log', () => {
  test('an endpoint created just before an event gets it, though the projector had not applied the creation when the reactor read the event', async () => {
    const org = await fixture.service.organization({ usd: '100' });
    const api = client(fixture.service, org.liveKey);
    const video = await tracked(api);
    await webhooksQuiet(fixture.service);
    const endpoint = await whileProjectorLags(async () => {
      const created = expectStatus(await api.post('/webhooks', { url: `${fixture.receiver.url}/created-late`, events: ['video.stopped'] }), 201);
      fixture.receiver.expect('/created-late', created.secret);
      expectStatus(await api.stop(video.id), 200);
      return created;
    });
    await webhooksQuiet(fixture.service);
    const received = fixture.receiver.on('/created-late');
    assert.deepEqual(received.map((r) => r.json.type), ['video.stopped'], `the video.stopped after the creation of ${endpoint.id} must reach it`);
    assert.deepEqual(received[0]!.verifiedWith, [true]);
  });

  test('an endpoint created on a page of its own, which the reactor passed before the projector applied it, gets the events of later pages', async () => {
    const org = await fixture.service.organization({ usd: '100' });
    const api = client(fixture.service, org.liveKey);
    const video = await tracked(api);
    await webhooksQuiet(fixture.service);
    let endpointId = '';
    await whileProjectorLags(
      async () => expectStatus(await api.stop(video.id), 200),
      {
        pageBefore: async () => {
          const created = expectStatus(await api.post('/webhooks', { url: `${fixture.receiver.url}/created-page-before`, events: ['video.stopped'] }), 201);
          fixture.receiver.expect('/created-page-before', created.secret);
          endpointId = created.id;
        },
      },
    );
    await webhooksQuiet(fixture.service);
    const received = fixture.receiver.on('/created-page-before');
    assert.deepEqual(received.map((r) => r.json.type), ['video.stopped'], `the video.stopped after the creation of ${endpointId} must reach it`);
  });

  test('an endpoint disabled just before an event gets no delivery of it, though the projector had not applied the disable', async () => {
    const org = await fixture.service.organization({ usd: '100' });
    const api = client(fixture.service, org.liveKey);
    const endpoint = expectStatus(await api.post('/webhooks', { url: `${fixture.receiver.url}/disabled-late`, events: ['video.stopped'] }), 201);
    fixture.receiver.expect('/disabled-late', endpoint.secret);
    const video = await tracked(api);
    await webhooksQuiet(fixture.service);
    const patch = { method: 'PATCH' as const, url: `${API}/webhooks/${endpoint.id}`, headers: { 'x-api-key': org.liveKey }, payload: { enabled: false } };
    await whileProjectorLags(async () => {
      expectStatus(await fixture.service.app.inject(patch), 200);
      expectStatus(await api.stop(video.id), 200);
    });
    await webhooksQuiet(fixture.service);
    assert.equal(expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200).enabled, false);
    const { deliveries } = expectStatus(await api.get(`/webhooks/${endpoint.id}/deliveries`), 200);
    assert.deepEqual(deliveries, [], 'an event after the disable is no delivery of the endpoint (not even one failed as "endpoint disabled")');
    assert.equal(fixture.receiver.on('/disabled-late').length, 0);
  });
});

describe('webhook targets however far behind the reactor is', () => {
  test('an endpoint created after an event does not get it, though the reactor read both on one page; it gets the events after it', async () => {
    const org = await fixture.service.organization({ usd: '100' });
    const api = client(fixture.service, org.liveKey);
    const [earlier, later] = [await tracked(api), await tracked(api)];
    await webhooksQuiet(fixture.service);
    const endpoint = await withReactorBehind(fixture.service, async () => {
      expectStatus(await api.stop(earlier.id), 200);
      const created = expectStatus(await api.post('/webhooks', { url: `${fixture.receiver.url}/created-after`, events: ['video.stopped'] }), 201);
      fixture.receiver.expect('/created-after', created.secret);
      return created;
    });
    expectStatus(await api.stop(later.id), 200);
    await fixture.receiver.waitFor('/created-after', 1);
    await webhooksQuiet(fixture.service);
    const received = fixture.receiver.on('/created-after').map((r) => r.json.data.video.id);
    assert.deepEqual(received, [later.id], `${endpoint.id} was created after ${earlier.id} stopped`);
  });
});
