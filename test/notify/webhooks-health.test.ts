// An endpoint's health (failing since when): enabling it again starts its 5 days of failures
// afresh, and a delivery the service fails itself (endpoint disabled) is no failure of the
// receiver, which it never reached.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import { READ_SCHEMA } from '../../projections/index.ts';
import { API, client, expectStatus, tracked } from '../api/helpers.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

let paths = 0;
/** An organization, its API, and an endpoint on a fresh fixture.receiver path subscribed to `events`. */
async function subscribed(events: string[]) {
  const org = await fixture.service.organization({ usd: '100' });
  const api = client(fixture.service, org.liveKey);
  const path = `/health-${++paths}`;
  const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events }), 201);
  fixture.receiver.expect(path, endpoint.secret);
  const patch = (body: object) => fixture.service.app.inject({ method: 'PATCH', url: `${API}/webhooks/${endpoint.id}`, headers: { 'x-api-key': org.liveKey }, payload: body });
  return { api, path, endpoint, patch };
}

async function deliveriesOf(api: ReturnType<typeof client>, endpointId: string): Promise<Array<Record<string, any>>> {
  return expectStatus(await api.get(`/webhooks/${endpointId}/deliveries`), 200).deliveries;
}

/** Waits until the endpoint's newest delivery is `status` after `attempts` attempts, its attempt recorded. */
async function newestDelivery(api: ReturnType<typeof client>, endpointId: string, status: string, attempts: number) {
  return until(`the newest delivery of ${endpointId} ${status} after ${attempts} attempt(s)`, async () => {
    const [newest] = await deliveriesOf(api, endpointId);
    if (!newest || newest.status !== status || newest.attempts !== attempts) return undefined;
    if (status === 'pending' && !(Date.parse(newest.next_attempt_at) > fixture.service.clock.now().getTime())) return undefined;
    return newest;
  }, 10_000, 20);
}

async function disabledEmails(endpointId: string): Promise<number> {
  const { rows } = await fixture.service.db.pool.query(`SELECT 1 FROM notify.outbox WHERE message_id LIKE $1`, [`<${endpointId}.disabled.%`]);
  return rows.length;
}

describe('webhook endpoint health', () => {
  test('an endpoint enabled again after 5 days of failures gets 5 days afresh: one failure does not disable it again', async () => {
    const { api, path, endpoint, patch } = await subscribed(['snapshot.created']);
    fixture.receiver.script(path, ...Array(20).fill(500));
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    await newestDelivery(api, endpoint.id, 'pending', 1);
    fixture.service.clock.advance(5 * 24 * HOUR_MS + 60_000);
    expectStatus(await api.post(`/webhooks/${endpoint.id}/test`), 202);
    await fixture.receiver.waitFor(path, 2);
    await until('the endpoint disabled after 5 days of failures', async () => {
      const body = expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200);
      return body.disabled_reason === 'failing' ? body : undefined;
    }, 10_000, 20);
    await until('the e-mail about the disabled endpoint recorded', async () => ((await disabledEmails(endpoint.id)) === 1 ? true : undefined), 10_000, 20);

    // The receiver is fixed but for one more failure (a deploy), and the endpoint enabled again.
    fixture.service.clock.advance(HOUR_MS);
    expectStatus(await patch({ enabled: true }), 200);
    expectStatus(await api.post(`/webhooks/${endpoint.id}/test`), 202);
    await fixture.receiver.waitFor(path, 3);
    await until('the failed attempt of the test recorded', async () => {
      const [newest] = await deliveriesOf(api, endpoint.id);
      return newest?.event_type === 'webhook.test' && newest.attempts === 1 && newest.last_response_status === 500 ? newest : undefined;
    }, 10_000, 20);
    // What follows from the attempt (a disable) has ended too; the read model shows it.
    await webhooksQuiet(fixture.service);
    const after = expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200);
    assert.equal(after.enabled, true, `one failure since it was enabled again must not disable it (disabled_reason: ${after.disabled_reason})`);
    assert.equal(await disabledEmails(endpoint.id), 1, 'no second "failed for 5 days" e-mail');
  });

  test('a delivery failed as "endpoint disabled" (the receiver never called) leaves the endpoint\'s health as it was', async (t) => {
    const { api, path, endpoint, patch } = await subscribed(['snapshot.created']);
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    t.after(() => answer());
    // The first snapshot's answer is held, so the second of the same video waits behind it.
    fixture.receiver.script(path, { status: 200, hold: held });
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    fixture.service.clock.advance(HOUR_MS);
    await collectDue(fixture.service.work);
    await until('the second snapshot recorded', async () => ((await deliveriesOf(api, endpoint.id)).length === 2 ? true : undefined), 10_000, 20);
    expectStatus(await patch({ enabled: false }), 200);
    answer();
    const [second, first] = await until('both deliveries ended', async () => {
      const list = await deliveriesOf(api, endpoint.id);
      return list.every((d) => d.status !== 'pending') ? list : undefined;
    }, 10_000, 20);
    assert.equal(first!.status, 'delivered');
    assert.equal(second!.status, 'failed');
    assert.equal(fixture.receiver.on(path).length, 1, 'the receiver got only the first');
    const { rows } = await fixture.service.db.pool.query(`SELECT failing_since FROM webhooks.endpoint_health WHERE endpoint_id = $1`, [endpoint.id]);
    assert.deepEqual(rows, [{ failing_since: null }], 'the endpoint has not failed since its last success');
  });

  test('an endpoint disabled and enabled again before the read models show the disable gets 5 days afresh', async () => {
    const { api, path, endpoint, patch } = await subscribed(['snapshot.created']);
    fixture.receiver.script(path, 500);
    await tracked(api);
    await newestDelivery(api, endpoint.id, 'pending', 1);
    const failingSince = async () => {
      const { rows } = await fixture.service.db.pool.query(`SELECT failing_since FROM webhooks.endpoint_health WHERE endpoint_id = $1`, [endpoint.id]);
      return rows[0]?.failing_since ?? null;
    };
    assert.notEqual(await failingSince(), null, 'the failed attempt started the failing clock');
    // A transaction holds the endpoints table: the projector cannot apply the disable, and the
    // enable sees a read model that still shows the endpoint enabled.
    const holder = await fixture.service.db.pool.connect();
    try {
      await holder.query(`BEGIN; LOCK TABLE ${READ_SCHEMA}.webhook_endpoints IN EXCLUSIVE MODE`);
      expectStatus(await patch({ enabled: false }), 200);
      expectStatus(await patch({ enabled: true }), 200);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    assert.equal(await failingSince(), null, 'enabling the endpoint the log holds disabled cleared its failing clock');
    await until('the read model to show the endpoint enabled', async () => (expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200).enabled === true ? true : undefined), 10_000, 20);
  });
});
