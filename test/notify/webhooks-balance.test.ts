// balance.low: sent once when the available balance falls below the threshold (default: the
// cost of the next 24 h of the active videos; or the one set with `admin org set --low-balance`),
// armed again by a deposit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { deposit, setLowBalanceThreshold } from '../../src/commands/account-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { client, expectStatus, passHours, tracked } from '../api/helpers.ts';
import { webhookFixture, webhooksQuiet } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

let paths = 0;
async function funded(usd: string) {
  const org = await fixture.service.organization({ usd });
  const api = client(fixture.service, org.liveKey);
  const path = `/balance-${++paths}`;
  const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events: ['balance.low'] }), 201);
  fixture.receiver.expect(path, endpoint.secret);
  return { org, api, path };
}

const quiet = () => webhooksQuiet(fixture.service);

describe('balance.low', () => {
  test('default threshold (the next 24 h of active videos): once per crossing', async () => {
    const { api, path } = await funded('0.40');
    await tracked(api); // 1 day: 0.36 a day; 0.385 available after the first snapshot
    await passHours(fixture.service, 1); // 0.37: still above
    await quiet();
    assert.equal(fixture.receiver.on(path).length, 0);
    await passHours(fixture.service, 1); // 0.355 < 0.36
    const [low] = await fixture.receiver.waitFor(path, 1);
    assert.equal(low!.json.type, 'balance.low');
    assert.deepEqual(low!.verifiedWith, [true]);
    assert.equal(low!.json.data.available_balance_usd, 0.355);
    assert.equal(low!.json.data.threshold_usd, 0.36);
    assert.equal(low!.json.data.active_videos, 1);
    await passHours(fixture.service, 3);
    await quiet();
    assert.equal(fixture.receiver.on(path).length, 1, 'once per crossing');
  });

  test('a threshold set by the operator; a deposit arms it again', async () => {
    const { org, api, path } = await funded('1');
    await setLowBalanceThreshold(fixture.service.store, fixture.service.clock, org.orgId, parseUsd('0.95'));
    await tracked(api); // 0.985 available
    await passHours(fixture.service, 2); // 0.955
    await quiet();
    assert.equal(fixture.receiver.on(path).length, 0);
    await passHours(fixture.service, 1); // 0.94
    const [first] = await fixture.receiver.waitFor(path, 1);
    assert.equal(first!.json.data.threshold_usd, 0.95);
    await passHours(fixture.service, 1);
    await quiet();
    assert.equal(fixture.receiver.on(path).length, 1);
    // A deposit that does not lift it above the threshold arms it: the next fall is told again.
    await deposit(fixture.service.store, fixture.service.clock, org.orgId, parseUsd('0.001')!, 'a little');
    await passHours(fixture.service, 1);
    const [, second] = await fixture.receiver.waitFor(path, 2);
    assert.equal(second!.json.type, 'balance.low');
    assert.notEqual(second!.id, first!.id);
  });

  test('test-mode spending never sends balance.low', async () => {
    const { org, path } = await funded('0.40');
    await tracked(client(fixture.service, org.testKey));
    await passHours(fixture.service, 3);
    await quiet();
    assert.equal(fixture.receiver.on(path).length, 0);
  });
});
