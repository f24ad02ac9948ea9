// What webhooks.deliveries keeps: a deleted endpoint's deliveries go at the dispatcher's next
// hourly prune, and a delivered or failed delivery goes once it is older than the retention
// (30 days of service time by default); newer ones stay listed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { API, client, expectStatus, tracked } from '../api/helpers.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

/** Moves the service clock on and lets the dispatcher look at once; resolves once it and its prune are done. */
async function later(ms: number): Promise<void> {
  fixture.service.clock.advance(ms);
  fixture.service.webhooks!.dispatcher.kick();
  await webhooksQuiet(fixture.service);
}

async function rowsOf(endpointId: string): Promise<number> {
  const { rows } = await fixture.service.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE endpoint_id = $1`, [endpointId]);
  return rows[0]!.n;
}

let paths = 0;
/** An organization, its API, and an endpoint on a fresh receiver path subscribed to snapshot.created. */
async function subscribed(org?: { liveKey: string }) {
  const owner = org ?? (await fixture.service.organization({ usd: '100' }));
  const api = client(fixture.service, owner.liveKey);
  const path = `/retention-${++paths}`;
  const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events: ['snapshot.created'] }), 201);
  fixture.receiver.expect(path, endpoint.secret);
  const listed = async () => expectStatus(await api.get(`/webhooks/${endpoint.id}/deliveries`), 200).deliveries as Array<{ id: string; status: string }>;
  return { org: owner, api, path, endpoint, listed };
}

describe('webhook delivery retention', () => {
  test("a deleted endpoint's deliveries are pruned at the next hourly prune; another's stay", async () => {
    const kept = await subscribed();
    const deleted = await subscribed(kept.org);
    await tracked(kept.api);
    await fixture.receiver.waitFor(kept.path, 1);
    await fixture.receiver.waitFor(deleted.path, 1);
    await webhooksQuiet(fixture.service);
    assert.equal(await rowsOf(deleted.endpoint.id), 1);
    const before = await kept.listed();

    expectStatus(await fixture.service.app.inject({ method: 'DELETE', url: `${API}/webhooks/${deleted.endpoint.id}`, headers: { 'x-api-key': kept.org.liveKey } }), 200);
    await later(HOUR_MS);
    assert.equal(await rowsOf(deleted.endpoint.id), 0, "the deleted endpoint's deliveries pruned");
    assert.deepEqual(await kept.listed(), before, 'a delivery younger than 30 days stays');
  });

  test('a delivered delivery made more than 30 days ago is pruned; a newer one stays', async () => {
    const { api, path, listed } = await subscribed();
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    const [old] = await until('the first delivery delivered', async () => {
      const list = await listed();
      return list.length === 1 && list[0]!.status === 'delivered' ? list : undefined;
    }, 10_000, 20);
    fixture.service.clock.advance(30 * 24 * HOUR_MS);
    await tracked(api);
    await fixture.receiver.waitFor(path, 2);
    await later(HOUR_MS);
    const left = await listed();
    assert.equal(left.length, 1, `only the new delivery is left: ${JSON.stringify(left)}`);
    assert.notEqual(left[0]!.id, old!.id);
    assert.equal(left[0]!.status, 'delivered');
  });
});
