// Replay and recover on a disabled endpoint are refused (409, as a test to it is) and change
// nothing: sent to a disabled endpoint, each delivery would only fail again as "endpoint
// disabled", its attempts spent and its last answer lost. Enabled again, they send.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { API, client, expectError, expectStatus, tracked } from '../api/helpers.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

describe('replay and recover on a disabled endpoint', () => {
  test('answer 409 and leave the deliveries as they were; once enabled again they send', async () => {
    const org = await fixture.service.organization({ usd: '100' });
    const api = client(fixture.service, org.liveKey);
    const endpoint = expectStatus(await api.post('/webhooks', { url: `${fixture.receiver.url}/gone`, events: ['snapshot.created'] }), 201);
    fixture.receiver.expect('/gone', endpoint.secret);
    fixture.receiver.script('/gone', 410);
    const since = fixture.service.clock.now().toISOString();
    await tracked(api);
    await until('the endpoint disabled by its 410', async () => {
      const body = expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200);
      return body.disabled_reason === 'gone' ? body : undefined;
    }, 10_000, 20);
    const deliveries = async () => expectStatus(await api.get(`/webhooks/${endpoint.id}/deliveries`), 200).deliveries;
    const [failed] = await deliveries();
    assert.equal(failed.status, 'failed');
    assert.equal(failed.last_response_status, 410);

    const recovered = await api.post(`/webhooks/${endpoint.id}/recover`, { since });
    const replayed = await api.post(`/webhooks/${endpoint.id}/deliveries/${failed.id}/replay`);
    assert.deepEqual([recovered.statusCode, replayed.statusCode], [409, 409], `recover: ${recovered.body}; replay: ${replayed.body}`);
    expectError(recovered, 409, 'Webhook endpoint is disabled');
    expectError(replayed, 409, 'Webhook endpoint is disabled');
    // Had either queued it, the dispatcher would take it now.
    fixture.service.webhooks!.dispatcher.kick();
    await webhooksQuiet(fixture.service);
    assert.deepEqual(await deliveries(), [failed], 'the delivery as it was: failed once, with its 410');
    assert.equal(fixture.receiver.on('/gone').length, 1);

    const enable = { method: 'PATCH' as const, url: `${API}/webhooks/${endpoint.id}`, headers: { 'x-api-key': org.liveKey }, payload: { enabled: true } };
    expectStatus(await fixture.service.app.inject(enable), 200);
    expectStatus(await api.post(`/webhooks/${endpoint.id}/deliveries/${failed.id}/replay`), 202);
    const [, again] = await fixture.receiver.waitFor('/gone', 2);
    assert.equal(again!.id, failed.id, 'sent again with its webhook-id');
  });
});
