// Text PostgreSQL cannot hold (NUL, a lone UTF-16 surrogate), and numbers past its bigint, sent
// where the API reads them: a 400 naming the field, never the 503 a refused statement gave.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { encodeCursor } from '../../src/api/list-cursor.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { API, expectInvalid, expectStatus } from './helpers.ts';

let service: TestService;
let key: string;
let orgId: string;
before(async () => {
  service = await startTestService();
  ({ liveKey: key, orgId } = await service.organization({ usd: '10' }));
});
after(() => service.close());

const send = (method: 'GET' | 'POST' | 'PATCH', path: string, payload?: string) =>
  service.app.inject({ method, url: API + path, headers: { 'x-api-key': key, ...(payload ? { 'content-type': 'application/json' } : {}) }, payload });
const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const ENDPOINT = { url: 'https://93.184.215.14/hooks', events: ['snapshot.created'] };

describe('unstorable text in a body', () => {
  // Written as JSON escapes, as a client would send them: JSON.parse makes the characters.
  for (const [name, escaped] of [['NUL', 'a\\u0000b'], ['a lone surrogate', 'a\\ud800b']]) {
    test(`${name} in a webhook's description, created or changed`, async () => {
      const body = (description: string) => JSON.stringify({ ...ENDPOINT, description }).replace('"DESCRIPTION"', `"${escaped}"`);
      const refused = expectInvalid(await send('POST', '/webhooks', body('DESCRIPTION')), 'description');
      assert.match(refused[0]!.message, /NUL or an unpaired UTF-16 surrogate/);
      const created = expectStatus(await send('POST', '/webhooks', JSON.stringify(ENDPOINT)), 201);
      expectInvalid(await send('PATCH', `/webhooks/${created.id}`, `{"description":"${escaped}"}`), 'description');
      assert.equal(expectStatus(await send('GET', `/webhooks/${created.id}`), 200).description, null, 'nothing was stored');
    });
  }

  test('in a nested value and in a key', async () => {
    expectInvalid(await send('POST', '/webhooks', JSON.stringify({ ...ENDPOINT, events: ['x'] }).replace('"x"', '"x\\u0000"')), 'events.0');
    expectInvalid(await send('POST', '/alerts', '{"video_id":"all","metric":"views","condition":{"crosses\\u0000":1}}'), 'condition.crosses\u0000');
  });

  test('a video link with NUL, refused naming video_link', async () => {
    const refused = expectInvalid(await send('POST', '/videos/track', '{"video_link":"https://youtu.be/abc\\u0000","duration_days":1}'), 'video_link');
    assert.equal(refused[0]!.message, 'video_link contains NUL or an unpaired UTF-16 surrogate, which cannot be stored');
  });
});

describe('cursors a client made', () => {
  test('a list cursor made for an id PostgreSQL cannot hold', async () => {
    // The fingerprint binds a cursor to its filters; it is no signature: a client can make one.
    const forged = encodeCursor({ orgId, mode: 'live' }, { createdAt: new Date('2026-03-01T00:00:00.000Z'), videoId: 'a\u0000b' });
    expectInvalid(await send('GET', `/videos?cursor=${forged}`), 'cursor');
  });

  test('a list cursor made for a time PostgreSQL cannot hold', async () => {
    for (const t of ['-004714-01-01T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z']) {
      const forged = encodeCursor({ orgId, mode: 'live' }, { createdAt: new Date(t), videoId: 'vid' });
      expectInvalid(await send('GET', `/videos?cursor=${forged}`), 'cursor');
    }
  });

  test('a deliveries cursor past the bigint range', async () => {
    const created = expectStatus(await send('POST', '/webhooks', JSON.stringify(ENDPOINT)), 201);
    const page = (s: string) => send('GET', `/webhooks/${created.id}/deliveries?cursor=${base64url({ e: created.id, s })}`);
    expectInvalid(await page('9999999999999999999'), 'cursor');
    expectInvalid(await page('9223372036854775808'), 'cursor');
    assert.deepEqual(expectStatus(await page('9223372036854775807'), 200).deliveries, []);
  });
});
