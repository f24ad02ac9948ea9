// GET /usage: spec §2.3 and §4.5, money exact to the micro-dollar (DESIGN §5).
// Expected amounts are computed in integer micro-USD and turned into a number once (usd()).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chargeUsage } from '../../src/collect/work.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectStatus, newLink, passHours, SNAPSHOT_MICROS, tracked, usd } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

const FIELDS = [
  'active_videos',
  'balance_usd',
  'cost_per_snapshot',
  'estimated_snapshots_remaining',
  'total_charged_usd',
  'total_snapshots',
  'uncharged_usage_usd',
];

async function charge() {
  await chargeUsage(service.work);
  await service.settle();
}

test('a new organization: its deposit and nothing else', async () => {
  const org = await service.organization({ usd: '20' });
  const usage = expectStatus(await client(service, org.liveKey).usage(), 200);
  assert.deepEqual(Object.keys(usage).sort(), FIELDS);
  assert.deepEqual(usage, {
    balance_usd: 20,
    total_snapshots: 0,
    active_videos: 0,
    uncharged_usage_usd: 0,
    total_charged_usd: 0,
    estimated_snapshots_remaining: 1333,
    cost_per_snapshot: 0.015,
  });
  for (const field of ['total_snapshots', 'active_videos', 'estimated_snapshots_remaining'] as const) assert.ok(Number.isInteger(usage[field]), field);
});

test('an organization without funds', async () => {
  const org = await service.organization();
  assert.deepEqual(expectStatus(await client(service, org.liveKey).usage(), 200), {
    balance_usd: 0,
    total_snapshots: 0,
    active_videos: 0,
    uncharged_usage_usd: 0,
    total_charged_usd: 0,
    estimated_snapshots_remaining: 0,
    cost_per_snapshot: 0.015,
  });
});

test('estimated_snapshots_remaining = floor(balance_usd / 0.015)', async () => {
  const cases: Array<[string, number]> = [
    ['0.014999', 0],
    ['0.015', 1],
    ['0.029999', 1],
    ['0.03', 2],
    ['0.3', 20],
    ['1', 66],
    ['10.8', 720],
    ['20', 1333],
    ['123456789.123456', 8_230_452_608],
  ];
  for (const [amount, remaining] of cases) {
    const org = await service.organization({ usd: amount });
    const usage = expectStatus(await client(service, org.liveKey).usage(), 200);
    const micros = parseUsd(amount)!;
    assert.equal(usage.balance_usd, usd(micros), amount);
    assert.equal(usage.estimated_snapshots_remaining, remaining, amount);
    assert.equal(usage.estimated_snapshots_remaining, Math.floor(micros / SNAPSHOT_MICROS), amount);
  }
});

test('deposits add up exactly (0.1 + 0.2 is 0.3)', async () => {
  const org = await service.organization({ usd: '0.1' });
  await deposit(service.store, service.clock, org.orgId, parseUsd('0.2')!, 'second');
  await service.settle();
  const usage = expectStatus(await client(service, org.liveKey).usage(), 200);
  assert.equal(usage.balance_usd, 0.3);
  assert.equal(usage.estimated_snapshots_remaining, 20);
});

test('snapshots, active videos, uncharged and charged usage, through a life', async () => {
  const org = await service.organization({ usd: '20' });
  const api = client(service, org.liveKey);
  const a = await tracked(api, newLink('youtube'), 30);
  await tracked(api, newLink('tiktok'), 2);
  let usage = expectStatus(await api.usage(), 200);
  assert.deepEqual(usage, {
    balance_usd: 20,
    total_snapshots: 2,
    active_videos: 2,
    uncharged_usage_usd: usd(2 * SNAPSHOT_MICROS),
    total_charged_usd: 0,
    estimated_snapshots_remaining: 1333,
    cost_per_snapshot: 0.015,
  });
  assert.equal(usage.uncharged_usage_usd, 0.03);

  await passHours(service, 3); // 2 videos x 3 more hours
  usage = expectStatus(await api.usage(), 200);
  assert.equal(usage.total_snapshots, 8);
  assert.equal(usage.uncharged_usage_usd, usd(8 * SNAPSHOT_MICROS));
  assert.equal(usage.uncharged_usage_usd, 0.12);
  assert.equal(usage.balance_usd, 20, 'the balance moves only when usage is charged');

  await charge();
  usage = expectStatus(await api.usage(), 200);
  assert.deepEqual(usage, {
    balance_usd: usd(20_000_000 - 8 * SNAPSHOT_MICROS),
    total_snapshots: 8,
    active_videos: 2,
    uncharged_usage_usd: 0,
    total_charged_usd: usd(8 * SNAPSHOT_MICROS),
    estimated_snapshots_remaining: Math.floor((20_000_000 - 8 * SNAPSHOT_MICROS) / SNAPSHOT_MICROS),
    cost_per_snapshot: 0.015,
  });
  assert.equal(usage.balance_usd, 19.88);
  assert.equal(usage.estimated_snapshots_remaining, 1325);

  expectStatus(await api.stop(a.id), 200);
  await passHours(service, 1); // only the tiktok video
  await charge();
  usage = expectStatus(await api.usage(), 200);
  assert.equal(usage.active_videos, 1);
  assert.equal(usage.total_snapshots, 9);
  assert.equal(usage.total_charged_usd, usd(9 * SNAPSHOT_MICROS), 'cumulative, never reset');
  assert.equal(usage.total_charged_usd, 0.135);
  assert.equal(usage.balance_usd, usd(20_000_000 - 9 * SNAPSHOT_MICROS));
  assert.equal(usage.balance_usd, 19.865);
  assert.equal(usage.uncharged_usage_usd, 0);
  assert.equal(usage.estimated_snapshots_remaining, 1324);
});

test('many small charges leave no float dust', async () => {
  const org = await service.organization({ usd: '1' });
  const api = client(service, org.liveKey);
  await tracked(api, newLink(), 1);
  for (let hour = 0; hour < 6; hour++) {
    await passHours(service, 1);
    await charge();
  }
  const usage = expectStatus(await api.usage(), 200);
  assert.equal(usage.total_snapshots, 7);
  assert.equal(usage.total_charged_usd, 0.105);
  assert.equal(usage.balance_usd, 0.895);
  assert.equal(usage.uncharged_usage_usd, 0);
  assert.equal(usage.estimated_snapshots_remaining, 59);
});

test('paused videos are not active', async () => {
  const org = await service.organization({ usd: '0.5' });
  const api = client(service, org.liveKey);
  await tracked(api, newLink(), 1);
  await tracked(api, newLink(), 1);
  await passHours(service, 16);
  const usage = expectStatus(await api.usage(), 200);
  assert.equal(usage.active_videos, 1, 'one of the two is paused');
  // 2 first snapshots + 15 hours x 2 + one more hour for one of them
  assert.equal(usage.total_snapshots, 33);
  assert.equal(usage.uncharged_usage_usd, usd(33 * SNAPSHOT_MICROS));
  assert.ok(usage.balance_usd - usage.uncharged_usage_usd < 0.015, 'available funds no longer pay a snapshot');
});

test('usage belongs to the organization of the key', async () => {
  const a = await service.organization({ usd: '5' });
  const b = await service.organization({ usd: '7' });
  await tracked(client(service, a.liveKey), newLink(), 1);
  const usageA = expectStatus(await client(service, a.liveKey).usage(), 200);
  const usageB = expectStatus(await client(service, b.liveKey).usage(), 200);
  assert.equal(usageA.balance_usd, 5);
  assert.equal(usageA.total_snapshots, 1);
  assert.equal(usageB.balance_usd, 7);
  assert.equal(usageB.total_snapshots, 0);
  assert.equal(usageB.active_videos, 0);
});

test('401 without a key', async () => {
  expectError(await client(service).usage(), 401, 'API key required');
});
