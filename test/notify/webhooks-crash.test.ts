// A real service process killed with -9 between sending a webhook and recording the answer:
// after the restart the delivery is sent again, with the same webhook-id, and then recorded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';
import { WebhookReceiver } from '../support/webhook-receiver.ts';

test('kill -9 between send and record: delivered again with the same webhook-id', async (t) => {
  const receiver = await new WebhookReceiver().start();
  t.after(() => receiver.stop());
  const service = serviceProcess({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' });
  t.after(() => service.cleanup());
  await service.start();

  const { org_id: orgId } = await service.admin('org', 'create', '--name', 'Hooks', '--email', 'ops@hooks.test', '--plan', 'enterprise', '--rate-limit', '100000');
  const { api_key: key } = (await service.admin('key', 'create', '--org', String(orgId), '--name', 'hooks')) as { api_key: string };
  await service.admin('deposit', '--org', String(orgId), '--amount', '10');
  const created = await service.api('POST', '/webhooks', key, { url: `${receiver.url}/crash`, events: ['snapshot.created'] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  receiver.expect('/crash', created.body.secret);

  // The first request is held unanswered: the service is killed while it waits for the answer.
  let release!: () => void;
  receiver.script('/crash', { status: 200, hold: new Promise<void>((resolve) => (release = resolve)) });
  const video = await service.api('POST', '/videos/track', key, { video_link: 'https://youtu.be/crashhook01', duration_days: 1 });
  assert.equal(video.status, 201, JSON.stringify(video.body));
  const [first] = await receiver.waitFor('/crash', 1, 30_000);
  await service.stop('SIGKILL');
  release();

  await service.start();
  // The dead sender's claim lapses (20 s), then the restarted one sends it again.
  const requests = await receiver.waitFor('/crash', 2, 60_000);
  assert.equal(requests[1]!.id, first!.id, 'the same webhook-id');
  assert.equal(requests[1]!.body, first!.body, 'the same body');
  assert.deepEqual(requests.map((r) => r.verifiedWith[0]), [true, true]);
  await until('the delivery recorded as delivered', async () => {
    const list = await service.api('GET', `/webhooks/${created.body.id}/deliveries`, key);
    const [only] = list.body.deliveries;
    return list.body.deliveries.length === 1 && only.status === 'delivered' && only.id === first!.id ? true : undefined;
  }, 30_000);
  await service.stop();
});

test('a real service at TIME_SCALE=3600: retries on the service clock until the receiver answers 2xx, then a 410 disables the endpoint', async (t) => {
  const receiver = await new WebhookReceiver().start();
  t.after(() => receiver.stop());
  const service = serviceProcess({ TIME_SCALE: '3600', WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' });
  t.after(() => service.cleanup());
  await service.start();
  const { org_id: orgId } = await service.admin('org', 'create', '--name', 'Scaled', '--email', 'ops@scaled.test', '--plan', 'enterprise', '--rate-limit', '100000');
  const { api_key: key } = (await service.admin('key', 'create', '--org', String(orgId), '--name', 'hooks', '--mode', 'test')) as { api_key: string };
  const created = await service.api('POST', '/webhooks', key, { url: `${receiver.url}/scaled`, events: ['video.stopped'] });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  receiver.expect('/scaled', created.body.secret);

  // Failing three times: at once, then 5 s, 5 min and 30 min of service time later (about half a second here).
  receiver.script('/scaled', 500, 503, 502);
  const first = await service.api('POST', '/videos/track', key, { video_link: 'https://youtu.be/scaledhook1', duration_days: 1 });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  assert.equal((await service.api('POST', `/videos/${first.body.id}/stop`, key)).status, 200);
  const requests = await receiver.waitFor('/scaled', 4, 30_000);
  assert.equal(new Set(requests.map((r) => r.id)).size, 1, 'one webhook-id across the retries');
  assert.ok(requests.every((r) => r.verifiedWith[0]), 'every attempt verifies');
  assert.equal(requests[0]!.json.type, 'video.stopped');
  await until('the delivery recorded as delivered after 4 attempts', async () => {
    const list = await service.api('GET', `/webhooks/${created.body.id}/deliveries`, key);
    const [only] = list.body.deliveries;
    return only?.status === 'delivered' && only.attempts === 4 ? true : undefined;
  }, 30_000);

  receiver.script('/scaled', 410);
  const second = await service.api('POST', '/videos/track', key, { video_link: 'https://youtu.be/scaledhook2', duration_days: 1 });
  assert.equal((await service.api('POST', `/videos/${second.body.id}/stop`, key)).status, 200);
  await receiver.waitFor('/scaled', 5, 30_000);
  await until('the endpoint disabled after 410', async () => {
    const endpoint = await service.api('GET', `/webhooks/${created.body.id}`, key);
    return endpoint.body.enabled === false && endpoint.body.disabled_reason === 'gone' ? true : undefined;
  }, 30_000);
  await service.stop();
});
