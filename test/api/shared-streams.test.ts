// Commands on a stream all of an organization's requests share (its alerts, its webhook
// endpoints): a burst of them at once is each answered, none 5xx, and every change is kept.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { streamIdOfAlerts } from '../../src/domain/alerts.ts';
import { WrongExpectedRevision } from '../../src/eventstore/port.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { client, expectError, expectStatus } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

function statusesOf(answers: Array<{ statusCode: number }>): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.statusCode] = (counts[a.statusCode] ?? 0) + 1;
  return counts;
}

describe('commands on a shared stream, sent at once', () => {
  test('40 POST /alerts from one organization are all 201, and the 40 alerts exist', async () => {
    const org = await service.organization();
    const api = client(service, org.liveKey);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: i + 1 } })),
    );
    assert.deepEqual(statusesOf(answers), { 201: 40 }, answers.find((a) => a.statusCode !== 201)?.body);
    const listed = expectStatus(await api.get('/alerts'), 200);
    assert.deepEqual(listed.alerts.map((a: { id: string }) => a.id).sort(), answers.map((a) => a.json().id).sort());
  });

  test('20 POST /webhooks from one organization are all 201 (the limit), the 21st a 409', async () => {
    const org = await service.organization();
    const api = client(service, org.liveKey);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => api.post('/webhooks', { url: `https://93.184.215.14/hooks/${i}`, events: ['snapshot.created'] })));
    assert.deepEqual(statusesOf(answers), { 201: 20 }, answers.find((a) => a.statusCode !== 201)?.body);
    expectError(await api.post('/webhooks', { url: 'https://93.184.215.14/hooks/21', events: ['snapshot.created'] }), 409, 'Too many webhook endpoints');
  });

  test('when another writer wins every retry, the answer is a 409 to retry, not a 503', async () => {
    const org = await service.organization();
    const api = client(service, org.liveKey);
    const stream = streamIdOfAlerts(org.orgId);
    // Another process appends to the alerts stream before each of this one's appends.
    // (The API's batching store sends every append through the store's appendMany.)
    const appendMany = service.store.appendMany;
    service.store.appendMany = async function (appends) {
      const rest = appends.filter((a) => a.streamId !== stream);
      const written = rest.length > 0 ? await appendMany.call(this, rest) : [];
      return appends.map((a) => (a.streamId === stream ? { streamId: a.streamId, ok: false, conflict: new WrongExpectedRevision(a.streamId, a.expectedRevision, 0n) } : written.shift()!));
    };
    try {
      expectError(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: 1 } }), 409, 'Conflicting concurrent change, retry');
    } finally {
      service.store.appendMany = appendMany;
    }
    expectStatus(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: 1 } }), 201);
  });
});
