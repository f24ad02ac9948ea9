// requestJson against a real HTTP server: what a platform's body can do to the collector.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isFailure, MAX_BODY_BYTES, requestJson } from '../../src/collect/collectors/http.ts';

type Answer = { status: number; body: Buffer; chunked: boolean };

describe('requestJson', () => {
  let server: http.Server;
  let baseUrl: string;
  const answers = new Map<string, Answer>();

  before(async () => {
    server = http.createServer((request, response) => {
      const answer = answers.get(request.url!)!;
      const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json' };
      if (!answer.chunked) headers['content-length'] = answer.body.byteLength;
      response.writeHead(answer.status, headers);
      // In 1 MB pieces, as a platform streaming a long answer would.
      for (let at = 0; at < answer.body.byteLength; at += 1 << 20) response.write(answer.body.subarray(at, at + (1 << 20)));
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const answer = (path: string, status: number, body: string | Buffer, chunked = false) => {
    answers.set(path, { status, body: Buffer.from(body), chunked });
    return requestJson('Fake', `${baseUrl}${path}`, { timeoutMs: 10_000 });
  };
  /** A JSON array of zeros, `bytes` long. */
  const zeros = (bytes: number) => `[${'0,'.repeat((bytes - 3) / 2)}0]`;

  it('reads a body up to MAX_BODY_BYTES', async () => {
    const result = await answer('/largest', 200, zeros(MAX_BODY_BYTES - 1), true);
    assert.ok(!isFailure(result), JSON.stringify(result));
    assert.equal((result.body as unknown[]).length, (MAX_BODY_BYTES - 2) / 2);
  });

  it('refuses a longer success as invalid, streamed or announced, instead of holding it whole', async () => {
    for (const chunked of [true, false]) {
      const result = await answer(`/huge-${chunked}`, 200, zeros(MAX_BODY_BYTES + 3), chunked);
      assert.deepEqual(result, { status: 'invalid', message: `Fake answered HTTP 200 with a body over ${MAX_BODY_BYTES} bytes` }, `chunked: ${chunked}`);
    }
  });

  it('hands a longer error answer back with its status and no body', async () => {
    const result = await answer('/huge-404', 404, Buffer.alloc(MAX_BODY_BYTES + 1, 'x'), true);
    assert.deepEqual(isFailure(result) ? result : [result.status, result.body], [404, undefined]);
  });

  it('reads UTF-8 as response.text() does: a byte order mark dropped', async () => {
    const result = await answer('/bom', 200, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"title":"café"}')]));
    assert.deepEqual(isFailure(result) ? result : result.body, { title: 'café' });
  });
});
