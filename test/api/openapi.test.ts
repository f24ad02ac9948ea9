// GET /api/v1/openapi.json: a valid OpenAPI 3 document of the six endpoints, generated from the
// same schemas that validate requests (DESIGN §7); GET /health.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';
import { API, client, expectStatus, tracked } from './helpers.ts';

let service: TestService;
let doc: Record<string, any>;
before(async () => {
  service = await startTestService();
  const response = await service.app.inject({ method: 'GET', url: `${API}/openapi.json` });
  assert.equal(response.statusCode, 200, response.body);
  assert.match(String(response.headers['content-type']), /^application\/json/);
  doc = response.json();
});
after(() => service.close());

const OPERATIONS: Array<[string, string, number]> = [
  ['/videos/track', 'post', 201],
  ['/videos', 'get', 200],
  ['/videos/{id}', 'get', 200],
  ['/videos/{id}/stop', 'post', 200],
  ['/usage', 'get', 200],
  ['/videos/{id}/snapshots.csv', 'get', 200],
  // Webhooks (issue 11).
  ['/webhooks', 'post', 201],
  ['/webhooks', 'get', 200],
  ['/webhooks/{id}', 'get', 200],
  ['/webhooks/{id}', 'patch', 200],
  ['/webhooks/{id}', 'delete', 200],
  ['/webhooks/{id}/rotate-secret', 'post', 200],
  ['/webhooks/{id}/test', 'post', 202],
  ['/webhooks/{id}/deliveries', 'get', 200],
  ['/webhooks/{id}/deliveries/{delivery_id}/replay', 'post', 202],
  ['/webhooks/{id}/recover', 'post', 202],
  ['/alerts', 'post', 201],
  ['/alerts', 'get', 200],
  ['/alerts/{id}', 'delete', 200],
];

/** Error statuses each operation can answer with (spec §4, §5, §7, §8 and DESIGN §8). */
// Every route can answer 400 (a malformed or overlong URL, a bad body), 401, 429 and the 503 of
// an outage, besides its own.
const ERRORS: Record<string, number[]> = {
  'post /videos/track': [400, 401, 402, 404, 409, 429, 500, 502, 503],
  'get /videos': [400, 401, 429, 503],
  'get /videos/{id}': [400, 401, 403, 404, 429, 503],
  'post /videos/{id}/stop': [400, 401, 403, 404, 429, 503],
  'get /usage': [400, 401, 429, 503],
  'get /videos/{id}/snapshots.csv': [400, 401, 403, 404, 429, 503],
  'post /webhooks': [400, 401, 409, 429, 503],
  'get /webhooks': [400, 401, 429, 503],
  'get /webhooks/{id}': [400, 401, 403, 404, 429, 503],
  'patch /webhooks/{id}': [400, 401, 403, 404, 429, 503],
  'delete /webhooks/{id}': [400, 401, 403, 404, 429, 503],
  'post /webhooks/{id}/rotate-secret': [400, 401, 403, 404, 429, 503],
  'post /webhooks/{id}/test': [400, 401, 403, 404, 409, 429, 503],
  'get /webhooks/{id}/deliveries': [400, 401, 403, 404, 429, 503],
  'post /webhooks/{id}/deliveries/{delivery_id}/replay': [400, 401, 403, 404, 409, 429, 503],
  'post /webhooks/{id}/recover': [400, 401, 403, 404, 409, 429, 503],
  'post /alerts': [400, 401, 403, 404, 409, 429, 503],
  'get /alerts': [400, 401, 429, 503],
  'delete /alerts/{id}': [400, 401, 403, 404, 429, 503],
};

/** Follows a local `#/...` reference. */
function resolve(schema: Record<string, any>): Record<string, any> {
  if (!schema.$ref) return schema;
  const target = (schema.$ref as string)
    .replace(/^#\//, '')
    .split('/')
    .reduce<any>((node, part) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
  assert.ok(target, `unresolved $ref ${schema.$ref}`);
  return resolve(target);
}

function operation(path: string, method: string): Record<string, any> {
  const op = doc.paths?.[path]?.[method];
  assert.ok(op, `${method.toUpperCase()} ${path} is documented`);
  return op;
}

function successSchema(path: string, method: string, status: number) {
  return resolve(operation(path, method).responses[String(status)].content['application/json'].schema);
}

describe('document', () => {
  test('an OpenAPI 3 document with info and servers', () => {
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.equal(typeof doc.info?.title, 'string');
    assert.ok(doc.info.title.length > 0);
    assert.equal(typeof doc.info.version, 'string');
    assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0);
    assert.equal(doc.servers[0].url, API);
  });

  test('lists exactly the six endpoints', () => {
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).filter((k) => ['get', 'post', 'put', 'patch', 'delete'].includes(k)).map((m) => `${m} ${path}`))
      .sort();
    assert.deepEqual(documented, OPERATIONS.map(([path, method]) => `${method} ${path}`).sort());
  });

  test('every $ref resolves', () => {
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (node && typeof node === 'object') {
        const object = node as Record<string, unknown>;
        if (typeof object.$ref === 'string') resolve(object);
        Object.values(object).forEach(walk);
      }
    };
    walk(doc);
  });

  test('every response has a description and a schema (JSON, or CSV for the CSV export)', () => {
    for (const [path, method] of OPERATIONS) {
      for (const [status, response] of Object.entries(operation(path, method).responses as Record<string, any>)) {
        assert.match(status, /^[1-5]\d\d$/);
        assert.equal(typeof response.description, 'string', `${method} ${path} ${status}`);
        const type = path.endsWith('.csv') && status === '200' ? 'text/csv' : 'application/json';
        assert.ok(response.content?.[type]?.schema, `${method} ${path} ${status} has a ${type} schema`);
      }
    }
  });

  test('the API key is declared as the X-API-Key header and required', () => {
    const schemes = doc.components?.securitySchemes ?? {};
    const [name, scheme] = Object.entries(schemes as Record<string, any>)[0] ?? [];
    assert.ok(name);
    assert.deepEqual({ type: scheme.type, in: scheme.in, name: scheme.name.toLowerCase() }, { type: 'apiKey', in: 'header', name: 'x-api-key' });
    assert.deepEqual(doc.security, [{ [name]: [] }]);
  });
});

describe('operations', () => {
  test('success and error statuses as the spec gives them', () => {
    for (const [path, method, success] of OPERATIONS) {
      const statuses = Object.keys(operation(path, method).responses).map(Number).sort((a, b) => a - b);
      assert.deepEqual(statuses, [success, ...ERRORS[`${method} ${path}`]!].sort((a, b) => a - b), `${method} ${path}`);
    }
  });

  test('track: the request body and the 201 fields', () => {
    const body = operation('/videos/track', 'post').requestBody;
    assert.equal(body.required, true);
    const schema = resolve(body.content['application/json'].schema);
    assert.deepEqual([...schema.required].sort(), ['duration_days', 'video_link']);
    assert.equal(schema.properties.video_link.type, 'string');
    assert.deepEqual(
      { type: schema.properties.duration_days.type, minimum: schema.properties.duration_days.minimum, maximum: schema.properties.duration_days.maximum },
      { type: 'integer', minimum: 1, maximum: 30 },
    );
    assert.deepEqual(Object.keys(successSchema('/videos/track', 'post', 201).properties).sort(), [
      'created_at',
      'days_remaining',
      'estimated_cost',
      'id',
      'job_id',
      'monitoring_duration_days',
      'platform',
      'status',
      'video_link',
    ]);
  });

  test('track: the Idempotency-Key header, optional', () => {
    const params = (operation('/videos/track', 'post').parameters ?? []) as Array<Record<string, any>>;
    const header = params.find((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key');
    assert.ok(header, `no Idempotency-Key header parameter: ${JSON.stringify(params)}`);
    assert.equal(header.required, false);
    assert.equal(header.schema.type, 'string');
  });

  test('every answer of every operation declares the X-RateLimit-* headers (spec §8)', () => {
    const missing: string[] = [];
    for (const key of Object.keys(ERRORS)) {
      const [method, path] = key.split(' ') as [string, string];
      for (const [status, response] of Object.entries(operation(path, method).responses as Record<string, Record<string, any>>)) {
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          if (response.headers?.[name]?.schema?.type !== 'integer') missing.push(`${key} ${status} ${name}`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  test('list: the query parameters and the response', () => {
    const params: Record<string, Record<string, any>> = Object.fromEntries(
      (operation('/videos', 'get').parameters as Array<Record<string, any>>).map((p) => [p.name, p]),
    );
    assert.deepEqual(Object.keys(params).sort(), ['cursor', 'limit', 'platform', 'status']);
    for (const p of Object.values(params)) {
      assert.equal(p.in, 'query');
      assert.notEqual(p.required, true);
    }
    const limit = resolve(params.limit.schema);
    assert.deepEqual({ type: limit.type, minimum: limit.minimum, maximum: limit.maximum, default: limit.default }, { type: 'integer', minimum: 1, maximum: 100, default: 50 });
    const statusValues = JSON.stringify(params.status.schema);
    for (const status of ['monitoring', 'completed', 'paused', 'error', 'cancelled']) assert.ok(statusValues.includes(`"${status}"`), status);
    assert.equal(resolve(params.cursor.schema).type, 'string');
    const list = successSchema('/videos', 'get', 200);
    assert.deepEqual(Object.keys(list.properties).sort(), ['limit', 'next_cursor', 'total', 'videos']);
    assert.deepEqual({ type: list.properties.next_cursor.type, nullable: list.properties.next_cursor.nullable }, { type: 'string', nullable: true });
    const item = resolve(list.properties.videos.items);
    assert.deepEqual(Object.keys(item.properties).sort(), [
      'created_at',
      'current_metadata',
      'days_remaining',
      'id',
      'job_id',
      'monitoring_duration_days',
      'monitoring_started',
      'platform',
      'status',
      'video_link',
    ]);
  });

  test('get and stop: the id path parameter and the responses', () => {
    for (const [path, method] of [
      ['/videos/{id}', 'get'],
      ['/videos/{id}/stop', 'post'],
    ] as const) {
      const params = operation(path, method).parameters as Array<Record<string, any>>;
      assert.deepEqual(
        params.map((p) => [p.name, p.in, p.required]),
        [['id', 'path', true]],
        `${method} ${path}`,
      );
    }
    const video = successSchema('/videos/{id}', 'get', 200);
    for (const field of ['is_deleted', 'snapshots', 'last_updated', 'current_metadata', 'monitoring_started']) assert.ok(video.properties[field], field);
    const snapshot = resolve(video.properties.snapshots.items);
    for (const field of ['id', 'snapshot_id', 'snapshot_time', 'views', 'likes', 'comments', 'shares', 'saves', 'provider']) {
      assert.ok(snapshot.properties[field], `snapshot.${field}`);
    }
    assert.equal(snapshot.properties.views.type, 'string', 'metrics are decimal strings');
    assert.deepEqual(Object.keys(successSchema('/videos/{id}/stop', 'post', 200).properties).sort(), [
      'id',
      'job_id',
      'new_status',
      'previous_status',
      'success',
      'video_link',
    ]);
  });

  test('usage: the seven fields', () => {
    assert.deepEqual(Object.keys(successSchema('/usage', 'get', 200).properties).sort(), [
      'active_videos',
      'balance_usd',
      'cost_per_snapshot',
      'estimated_snapshots_remaining',
      'total_charged_usd',
      'total_snapshots',
      'uncharged_usage_usd',
    ]);
  });

  test('alerts: each documented error example is what the route answers', async () => {
    const documented = (path: string, method: string, status: number) => operation(path, method).responses[String(status)].content['application/json'].example;
    const mine = await service.organization({ usd: '1' });
    const theirs = await service.organization({ usd: '1' });
    const api = client(service, mine.liveKey);
    const remove = (apiKey: string, id: string) => service.app.inject({ method: 'DELETE', url: `${API}/alerts/${id}`, headers: { 'x-api-key': apiKey } });
    const create = (videoId: string) => api.post('/alerts', { video_id: videoId, metric: 'views', condition: { crosses: 1 } });

    // The limit counts the organization's alerts of both modes.
    const alertOfTestKey = expectStatus(await client(service, mine.testKey).post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: 1 } }), 201);
    for (let i = 1; i < 100; i++) expectStatus(await create('all'), 201);
    const tooMany = await create('all');
    assert.equal(tooMany.statusCode, 409, tooMany.body);
    assert.deepEqual(tooMany.json(), documented('/alerts', 'post', 409));

    const unknownVideo = await create('0b9c4a5e-3f0e-4a63-9d0c-6f3d2b1a8e47');
    assert.equal(unknownVideo.statusCode, 404, unknownVideo.body);
    assert.deepEqual(unknownVideo.json(), documented('/alerts', 'post', 404));
    const theirVideo = await create((await tracked(client(service, theirs.liveKey))).id);
    assert.equal(theirVideo.statusCode, 403, theirVideo.body);
    assert.deepEqual(theirVideo.json(), documented('/alerts', 'post', 403));

    const unknownAlert = await remove(mine.liveKey, 'alert_000000000000000000000000');
    assert.equal(unknownAlert.statusCode, 404, unknownAlert.body);
    assert.deepEqual(unknownAlert.json(), documented('/alerts/{id}', 'delete', 404));
    const theirAlert = await remove(theirs.liveKey, alertOfTestKey.id);
    assert.equal(theirAlert.statusCode, 403, theirAlert.body);
    assert.deepEqual(theirAlert.json(), documented('/alerts/{id}', 'delete', 403));
    assert.match(operation('/alerts/{id}', 'delete').responses['403'].description, /alert/);
    assert.match(operation('/alerts', 'post').description, /at most 100 alerts, its live and test keys' together/);
  });

  test('webhooks: each documented error example is what the route answers', async () => {
    const documented = (path: string, method: string, status: number) => operation(path, method).responses[String(status)].content['application/json'].example;
    const mine = await service.organization({ usd: '1' });
    const theirs = await service.organization({ usd: '1' });
    const api = client(service, mine.liveKey);
    const call = (apiKey: string, method: 'GET' | 'POST', url: string, payload?: object) =>
      service.app.inject({ method, url: `${API}${url}`, headers: { 'x-api-key': apiKey }, ...(payload ? { payload } : {}) });
    const create = (i: number) => api.post('/webhooks', { url: `https://93.184.215.14/hooks/${i}`, events: ['snapshot.created'] });
    const expectDocumented = (answer: Awaited<ReturnType<typeof call>>, path: string, method: string, status: number) => {
      assert.equal(answer.statusCode, status, `${method} ${path}: ${answer.body}`);
      assert.deepEqual(answer.json(), documented(path, method, status), `${method} ${path} ${status}`);
    };

    const endpoint = expectStatus(await create(0), 201);
    for (let i = 1; i < 20; i++) expectStatus(await create(i), 201);
    expectDocumented(await create(20), '/webhooks', 'post', 409);
    expectDocumented(await call(mine.liveKey, 'GET', '/webhooks/wh_000000000000000000000000'), '/webhooks/{id}', 'get', 404);
    expectDocumented(await call(theirs.liveKey, 'GET', `/webhooks/${endpoint.id}`), '/webhooks/{id}', 'get', 403);
    expectDocumented(
      await call(mine.liveKey, 'POST', `/webhooks/${endpoint.id}/deliveries/0b9c4a5e-3f0e-4a63-9d0c-6f3d2b1a8e47/replay`),
      '/webhooks/{id}/deliveries/{delivery_id}/replay',
      'post',
      404,
    );
    expectStatus(await service.app.inject({ method: 'PATCH', url: `${API}/webhooks/${endpoint.id}`, headers: { 'x-api-key': mine.liveKey }, payload: { enabled: false } }), 200);
    expectDocumented(await call(mine.liveKey, 'POST', `/webhooks/${endpoint.id}/test`), '/webhooks/{id}/test', 'post', 409);
    expectDocumented(await call(mine.liveKey, 'POST', `/webhooks/${endpoint.id}/recover`, { since: '2026-01-01T00:00:00Z' }), '/webhooks/{id}/recover', 'post', 409);
    // No refusal of an endpoint's route speaks of videos.
    for (const [path, method] of OPERATIONS.filter(([path]) => path.startsWith('/webhooks'))) {
      for (const [status, response] of Object.entries<any>(operation(path, method).responses).filter(([status]) => ['403', '404', '409'].includes(status))) {
        assert.doesNotMatch(`${response.description} ${JSON.stringify(response.content?.['application/json']?.example)}`, /video/i, `${method} ${path} ${status}`);
      }
    }
  });

  test('each documented path, under the server URL, is a route of the service', async () => {
    const org = await service.organization({ usd: '1' });
    for (const [path, method] of OPERATIONS) {
      const url = doc.servers[0].url + path.replace('{id}', 'some-id');
      const response = await service.app.inject({ method: method.toUpperCase() as 'GET' | 'POST', url, headers: { 'x-api-key': org.testKey } });
      assert.notDeepEqual(response.json(), { error: 'Not found' }, `${method} ${url} is routed`);
    }
  });
});

describe('health', () => {
  test('GET /health is 200 without a key', async () => {
    const response = await service.app.inject({ method: 'GET', url: '/health' });
    assert.deepEqual(expectStatus(response, 200), { status: 'ok' });
  });

  test('GET /api/v1/health is 200 too', async () => {
    assert.deepEqual(expectStatus(await service.app.inject({ method: 'GET', url: `${API}/health` }), 200), { status: 'ok' });
  });

  test('health and the document are not rate limited', async () => {
    for (let i = 0; i < 120; i++) {
      const response = await service.app.inject({ method: 'GET', url: '/health', remoteAddress: '10.200.0.1' });
      assert.equal(response.statusCode, 200);
    }
  });
});
