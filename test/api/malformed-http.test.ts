// Requests Node's HTTP layer refuses before Fastify sees them (a malformed request line,
// Content-Length beside Transfer-Encoding, oversized headers, an Expect other than
// 100-continue) still leave with a status and body of the spec (§7): 400 `Invalid request`
// with { field, message } details. Only a real socket shows this: app.inject skips Node's parser.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';
import { within } from '../support/wait.ts';
import { expectInvalid, type Response } from './helpers.ts';

let service: TestService;
let port: number;
let liveKey: string;
before(async () => {
  service = await startTestService();
  liveKey = (await service.organization({ usd: '1' })).liveKey;
  await service.app.listen({ host: '127.0.0.1', port: 0 });
  port = (service.app.server.address() as net.AddressInfo).port;
});
after(() => service.close());

/** Writes `bytes` on a connection of its own and returns everything the server sent until it closed the connection. */
async function raw(bytes: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  try {
    return await within(
      'the server to answer and close the connection',
      new Promise<string>((resolve, reject) => {
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
        socket.on('close', () => resolve(answer));
        // The server may close before it has read everything written: what it answered counts.
        socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' || error.code === 'EPIPE' ? undefined : reject(error)));
        socket.write(bytes);
      }),
      5_000,
    );
  } finally {
    socket.destroy();
  }
}

/** The answer as the API tests' Response, for their assertions. */
function parsed(answer: string): Response {
  const end = answer.indexOf('\r\n\r\n');
  assert.ok(end > 0, `not an HTTP answer: ${JSON.stringify(answer.slice(0, 300))}`);
  const [statusLine, ...lines] = answer.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  const body = answer.slice(end + 4);
  assert.equal(Number(headers['content-length']), Buffer.byteLength(body), `the whole body arrived: ${answer}`);
  assert.match(String(headers['content-type']), /^application\/json/, answer);
  return { statusCode: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)?.[1]), headers, body, json: () => JSON.parse(body) } as unknown as Response;
}

describe('requests refused by the HTTP parser', () => {
  test('a well-formed request over the same kind of connection works (the control)', async () => {
    const answer = await raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-API-Key: ${liveKey}\r\nConnection: close\r\n\r\n`);
    assert.equal(parsed(answer).statusCode, 200, answer);
  });

  test('a malformed request line is 400 Invalid request', async () => {
    expectInvalid(parsed(await raw(`GET /api/v1/usage HTTP/1.1 junk\r\nHost: x\r\nX-API-Key: ${liveKey}\r\n\r\n`)), 'request');
  });

  test('Content-Length beside Transfer-Encoding is 400 Invalid request', async () => {
    const bytes = `POST /api/v1/videos/track HTTP/1.1\r\nHost: x\r\nX-API-Key: ${liveKey}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;
    expectInvalid(parsed(await raw(bytes)), 'request');
  });

  test('headers over the size limit are 400 Invalid request naming the headers, not 431', async () => {
    expectInvalid(parsed(await raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-API-Key: ${'a'.repeat(20_000)}\r\nConnection: close\r\n\r\n`)), 'headers');
  });

  test('an Expect other than 100-continue is 400 Invalid request naming the header, not 417', async () => {
    const details = expectInvalid(parsed(await raw(`GET /api/v1/usage HTTP/1.1\r\nHost: x\r\nX-API-Key: ${liveKey}\r\nExpect: yes-please\r\nConnection: close\r\n\r\n`)), 'Expect');
    assert.match(details[0]!.message, /100-continue/);
  });
});
