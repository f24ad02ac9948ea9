// Webhook endpoints over the API: create (secret shown once), list, read, change, delete,
// rotate; the 20-endpoint limit; URL rules (https, http only on allowed hosts, no loopback,
// private, link-local or metadata addresses); test and live keys each see their own; the
// secret never reaches the log in clear.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { API, client, expectError, expectInvalid, expectStatus } from '../api/helpers.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
before(async () => {
  service = await startTestService({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1,localhost,hooks.internal.test' } });
});
after(() => service.close());

// A public address as a literal, so no name needs to resolve on a machine without DNS.
const PUBLIC_URL = 'https://93.184.215.14/hooks';

function webhooksApi(apiKey: string) {
  const api = client(service, apiKey);
  const headers = { 'x-api-key': apiKey };
  return {
    ...api,
    create: (body: object) => api.post('/webhooks', body),
    patch: (id: string, body: object) => service.app.inject({ method: 'PATCH', url: `${API}/webhooks/${id}`, headers, payload: body }),
    remove: (id: string) => service.app.inject({ method: 'DELETE', url: `${API}/webhooks/${id}`, headers }),
  };
}

describe('webhook endpoints', () => {
  test('create answers 201 with the secret once; list and get never show it', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    const created = expectStatus(await api.create({ url: PUBLIC_URL, events: ['snapshot.created', 'tracking.completed'], description: 'CRM' }), 201);
    assert.match(created.id, /^wh_/);
    assert.equal(created.url, PUBLIC_URL);
    assert.deepEqual(created.events, ['snapshot.created', 'tracking.completed']);
    assert.equal(created.enabled, true);
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);

    const one = expectStatus(await api.get(`/webhooks/${created.id}`), 200);
    assert.equal(one.secret, undefined);
    assert.equal(one.description, 'CRM');
    const list = expectStatus(await api.get('/webhooks'), 200);
    assert.deepEqual(list.webhooks.map((w: { id: string }) => w.id), [created.id]);
    assert.equal(list.webhooks[0].secret, undefined);

    // The log holds the secret sealed, never in clear.
    const { rows } = await service.db.pool.query(`SELECT data::text FROM es.events WHERE stream_id = $1`, [`webhooks-${org.orgId}`]);
    assert.ok(rows.length > 0);
    for (const row of rows) assert.ok(!row.data.includes(created.secret.slice(6)), 'the secret must not be in the log in clear');
  });

  test('patch changes url, events, description and enabled; delete removes it', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    const created = expectStatus(await api.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    const changed = expectStatus(await api.patch(created.id, { url: 'https://93.184.215.15:8443/x', events: ['video.stopped', 'tracking.failed'], enabled: false, description: 'n' }), 200);
    assert.equal(changed.url, 'https://93.184.215.15:8443/x');
    assert.deepEqual(changed.events, ['video.stopped', 'tracking.failed']);
    assert.equal(changed.enabled, false);
    assert.equal(changed.description, 'n');
    assert.equal(expectStatus(await api.patch(created.id, { enabled: true }), 200).enabled, true);
    expectStatus(await api.remove(created.id), 200);
    expectError(await api.get(`/webhooks/${created.id}`), 404, 'Webhook endpoint not found');
    expectError(await api.remove(created.id), 404, 'Webhook endpoint not found');
  });

  test('rotate-secret answers a new secret and when the old one stops signing (24 h of service time)', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    const created = expectStatus(await api.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    const rotated = expectStatus(await api.post(`/webhooks/${created.id}/rotate-secret`), 200);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    assert.equal(Date.parse(rotated.previous_secret_expires_at) - service.clock.now().getTime(), 24 * 3_600_000);
  });

  test('at most 20 endpoints per organization: the 21st is 409', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    for (let i = 0; i < 20; i++) expectStatus(await api.create({ url: `${PUBLIC_URL}/${i}`, events: ['snapshot.created'] }), 201);
    const refused = expectError(await api.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 409, 'Too many webhook endpoints');
    assert.equal(refused.limit, 20);
  });

  test('bad bodies are 400 naming the field', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    expectInvalid(await api.create({ events: ['snapshot.created'] }), 'url');
    expectInvalid(await api.create({ url: PUBLIC_URL }), 'events');
    expectInvalid(await api.create({ url: PUBLIC_URL, events: [] }), 'events');
    expectInvalid(await api.create({ url: PUBLIC_URL, events: ['video.exploded'] }), 'events.0');
    const created = expectStatus(await api.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    expectInvalid(await api.patch(created.id, { enabled: 'yes' }), 'enabled');
    expectInvalid(await api.patch(created.id, { url: 'ftp://example.com/' }), 'url');
  });

  test('URL rules: https, http only on allowed hosts, never loopback, private, link-local or metadata addresses', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    for (const url of [
      'http://93.184.215.14/hooks', // http on a host not in WEBHOOK_ALLOW_HOSTS
      'ftp://93.184.215.14/',
      'not a url',
      'https://user:pw@93.184.215.14/',
      'http://127.0.0.1:9/hook', // allowed for http, but loopback
      'http://localhost:9/hook', // a name that resolves to loopback
      'https://10.1.2.3/', 'https://192.168.1.1/', 'https://172.16.0.1/', 'https://100.64.0.1/',
      'https://169.254.169.254/latest/meta-data/', // cloud metadata
      'https://[::1]/', 'https://[fd00:ec2::254]/', 'https://[fe80::1]/', 'https://[::ffff:127.0.0.1]/',
      'https://0.0.0.0/',
    ]) {
      const details = expectInvalid(await api.create({ url, events: ['snapshot.created'] }), 'url');
      assert.ok(details.some((d) => d.field === 'url'), url);
    }
  });

  test('a URL longer than 2048 characters once percent-encoded is refused, so the endpoint as read can always be sent back', async () => {
    const org = await service.organization();
    const api = webhooksApi(org.liveKey);
    // 422 characters sent; 2,422 as stored and sent (each é is %C3%A9).
    const long = `${PUBLIC_URL}/${'é'.repeat(400)}`;
    const details = expectInvalid(await api.create({ url: long, events: ['snapshot.created'] }), 'url');
    assert.equal(details[0]!.message, 'url must be at most 2048 characters once percent-encoded');
    const created = expectStatus(await api.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    expectInvalid(await api.patch(created.id, { url: long }), 'url');
    // At the limit: taken, and the URL as read is taken back unchanged.
    const fits = `${PUBLIC_URL}/${'é'.repeat(Math.floor((2048 - PUBLIC_URL.length - 1) / 6))}`;
    const read = expectStatus(await api.patch(created.id, { url: fits }), 200);
    assert.ok(read.url.length <= 2048, `${read.url.length} characters`);
    assert.equal(expectStatus(await api.patch(created.id, { url: read.url }), 200).url, read.url);
  });

  test('a test key sees only its own endpoints; another organization gets 403', async () => {
    const org = await service.organization();
    const live = webhooksApi(org.liveKey);
    const testMode = webhooksApi(org.testKey);
    const liveEndpoint = expectStatus(await live.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    const testEndpoint = expectStatus(await testMode.create({ url: PUBLIC_URL, events: ['snapshot.created'] }), 201);
    assert.deepEqual(expectStatus(await live.get('/webhooks'), 200).webhooks.map((w: { id: string }) => w.id), [liveEndpoint.id]);
    assert.deepEqual(expectStatus(await testMode.get('/webhooks'), 200).webhooks.map((w: { id: string }) => w.id), [testEndpoint.id]);
    expectError(await testMode.get(`/webhooks/${liveEndpoint.id}`), 404, 'Webhook endpoint not found');

    const other = webhooksApi((await service.organization()).liveKey);
    expectError(await other.get(`/webhooks/${liveEndpoint.id}`), 403, 'Access denied');
    expectError(await other.remove(liveEndpoint.id), 403, 'Access denied');
    expectError(await other.get('/webhooks/nope'), 404, 'Webhook endpoint not found');
  });

  test('without a key: 401', async () => {
    expectError(await service.app.inject({ method: 'GET', url: `${API}/webhooks` }), 401, 'API key required');
  });
});
