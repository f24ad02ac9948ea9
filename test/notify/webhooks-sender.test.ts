// One HTTP attempt (src/notify/webhooks/sender.ts) against a real local receiver: the SSRF
// check is made again at send time, an answer that does not come in time ends the attempt,
// and a redirect is an answer, not something to follow.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { postWebhook } from '../../src/notify/webhooks/sender.ts';
import { isForbiddenAddress } from '../../src/notify/webhooks/address-guard.ts';
import { until, within } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

let receiver: WebhookReceiver;
before(async () => {
  receiver = await new WebhookReceiver().start();
});
after(() => receiver.stop());

const open = { allowHttpHosts: ['127.0.0.1'], allowPrivate: true };

describe('sending one attempt', () => {
  test('a loopback address is refused at send time unless WEBHOOK_ALLOW_PRIVATE=1', async () => {
    const refused = await postWebhook(`${receiver.url}/ssrf`, {}, '{}', { allowHttpHosts: ['127.0.0.1'], allowPrivate: false });
    assert.equal(refused.status, null);
    assert.match(refused.error!, /loopback, private, link-local or metadata/);
    assert.equal(receiver.on('/ssrf').length, 0, 'nothing reached the address');
    const allowed = await postWebhook(`${receiver.url}/ssrf`, {}, '{}', open);
    assert.equal(allowed.status, 200);
    assert.equal(receiver.on('/ssrf').length, 1);
  });

  test('http is refused at send time for a host not in WEBHOOK_ALLOW_HOSTS', async () => {
    const refused = await postWebhook(`${receiver.url}/http`, {}, '{}', { allowHttpHosts: [], allowPrivate: true });
    assert.equal(refused.status, null);
    assert.match(refused.error!, /https/);
    assert.equal(receiver.on('/http').length, 0);
  });

  test('no answer within the time limit ends the attempt', async (t) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    t.after(() => release());
    receiver.script('/slow', { status: 200, hold: held });
    const started = performance.now();
    const result = await postWebhook(`${receiver.url}/slow`, {}, '{}', open, { timeoutMs: 300 });
    assert.equal(result.status, null);
    assert.match(result.error!, /no answer within/);
    assert.ok(performance.now() - started < 5_000);
  });

  test("a name server that does not answer ends the attempt in the attempt's time", async () => {
    // The lookup stands in for a name server that never answers (none such can be set up here).
    const started = performance.now();
    const result = await postWebhook('https://hooks.example.test/x', {}, '{}', open, { timeoutMs: 300, resolve: () => new Promise(() => undefined) });
    assert.deepEqual(result, { status: null, retryAfter: undefined, error: "url's host did not resolve within 0.3 s" });
    assert.ok(performance.now() - started < 5_000);
  });

  test('a receiver that answers and never ends its body holds no socket past the attempt', async (t) => {
    // Headers announcing a body, then silence, on every connection.
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.once('data', () => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n'));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    t.after(() => {
      for (const socket of sockets) socket.destroy();
      silent.close();
    });
    const url = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}/hook`;
    const attempts = Promise.all(Array.from({ length: 17 }, () => postWebhook(url, {}, '{}', open, { timeoutMs: 2_000 })));
    const results = await within('all 17 attempts to settle', attempts, 10_000);
    assert.deepEqual(results.map((r) => r.status), Array(17).fill(200));
    await until('the receiver to see every socket closed', () => (sockets.size === 0 ? true : undefined), 5_000);
  });

  test("an endpoint's attempt does not wait behind other endpoints' slow attempts on the same host", async (t) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Two slow endpoints, each with the 10 deliveries in flight the dispatcher allows it.
    const slowPaths = ['/same-host/slow-1', '/same-host/slow-2'];
    for (const path of slowPaths) receiver.script(path, ...Array.from({ length: 10 }, () => ({ status: 200, hold: held })));
    const slow = slowPaths.flatMap((path) => Array.from({ length: 10 }, () => postWebhook(`${receiver.url}${path}`, {}, '{}', open, { timeoutMs: 10_000 })));
    t.after(async () => {
      release();
      await Promise.all(slow);
    });
    await receiver.waitFor(slowPaths[0]!, 10);
    await receiver.waitFor(slowPaths[1]!, 1);
    const healthy = await postWebhook(`${receiver.url}/same-host/healthy`, {}, '{}', open, { timeoutMs: 2_000 });
    assert.deepEqual(healthy, { status: 200, retryAfter: undefined, error: null });
  });

  test('a redirect is not followed', async () => {
    receiver.script('/moved', { status: 307, headers: { location: `${receiver.url}/target` } });
    const result = await postWebhook(`${receiver.url}/moved`, {}, '{}', open);
    assert.equal(result.status, 307);
    assert.equal(receiver.on('/target').length, 0);
  });

  test('forbidden addresses', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.1.1', '0.0.0.0', '::1', '::', 'fd00:ec2::254', 'fe80::1', '::ffff:10.0.0.1', 'not-an-ip']) {
      assert.equal(isForbiddenAddress(address), true, address);
    }
    for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111']) assert.equal(isForbiddenAddress(address), false, address);
  });

  test('an IPv6 address carrying a forbidden IPv4 one is forbidden, in any form; carrying a public one, it is not', () => {
    const carrying = ['::ffff:7f00:1', '::ffff:0:7f00:1', '::ffff:0:a9fe:a9fe', '64:ff9b::a9fe:a9fe', '64:ff9b::169.254.169.254', '2002:7f00:1::', '2002:a00:1::5', '::7f00:1', '::ffff:0:0'];
    const hidden = ['2001:0:4136:e378:8000:63bf:3fff:fdd2', '64:ff9b:1::a00:1']; // Teredo, local-use NAT64
    for (const address of [...carrying, ...hidden]) assert.equal(isForbiddenAddress(address), true, address);
    for (const address of ['::ffff:8.8.8.8', '::ffff:0:808:808', '64:ff9b::808:808', '2002:808:808::1']) assert.equal(isForbiddenAddress(address), false, address);
  });
});
