// Metric alerts over the API and when they fire: POST/GET/DELETE /alerts, and a metric.alert
// event (once per crossing) to the webhooks subscribed to it and an e-mail to the organization.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { API, client, expectError, expectInvalid, expectStatus, passHours, tracked } from '../api/helpers.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet, withReactorBehind } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

let paths = 0;
async function subscribed() {
  const org = await fixture.service.organization({ usd: '100' });
  const api = client(fixture.service, org.liveKey);
  const path = `/alerts-${++paths}`;
  const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events: ['metric.alert'] }), 201);
  fixture.receiver.expect(path, endpoint.secret);
  return { org, api, path };
}

async function emailsOf(alertId: string): Promise<Array<{ to: string; subject: string }>> {
  const { rows } = await fixture.service.db.pool.query(`SELECT message FROM notify.outbox WHERE message_id LIKE $1 ORDER BY recorded_at`, [`<${alertId}.%`]);
  return rows.map((r) => r.message);
}

describe('metric alerts', () => {
  test('create, list, delete; a test key sees only its own', async () => {
    const { org, api } = await subscribed();
    const video = await tracked(api);
    const created = expectStatus(await api.post('/alerts', { video_id: video.id, metric: 'views', condition: { crosses: 1000 } }), 201);
    assert.match(created.id, /^alert_/);
    assert.deepEqual({ ...created, id: undefined, created_at: undefined }, { id: undefined, video_id: video.id, metric: 'views', condition: { crosses: '1000' }, created_at: undefined });
    const big = expectStatus(await api.post('/alerts', { video_id: 'all', metric: 'likes', condition: { grows_per_hour: '36893488147419103232' } }), 201);
    assert.deepEqual(big.condition, { grows_per_hour: '36893488147419103232' });
    const list = expectStatus(await api.get('/alerts'), 200);
    // Made at the same fixture.service time (the test clock stands still): compared as a set.
    assert.deepEqual(list.alerts.map((a: { id: string }) => a.id).sort(), [created.id, big.id].sort());
    assert.deepEqual(expectStatus(await client(fixture.service, org.testKey).get('/alerts'), 200).alerts, []);
    const removed = await fixture.service.app.inject({ method: 'DELETE', url: `${API}/alerts/${created.id}`, headers: { 'x-api-key': org.liveKey } });
    expectStatus(removed, 200);
    assert.deepEqual(expectStatus(await api.get('/alerts'), 200).alerts.map((a: { id: string }) => a.id), [big.id]);
    const again = await fixture.service.app.inject({ method: 'DELETE', url: `${API}/alerts/${created.id}`, headers: { 'x-api-key': org.liveKey } });
    expectError(again, 404, 'Alert not found');
  });

  test('bad requests are 400 naming the field; someone else\'s video is 403, an unknown one 404', async () => {
    const { api } = await subscribed();
    assert.match(expectInvalid(await api.post('/alerts', { video_id: 'all', metric: 'hearts', condition: { crosses: 1 } }), 'metric')[0]!.message, /^metric must be one of: views, /);
    expectInvalid(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: -1 } }), 'condition');
    expectInvalid(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: 1, grows_per_hour: 2 } }), 'condition');
    expectInvalid(await api.post('/alerts', { video_id: 'all', metric: 'views' }), 'condition');
    expectInvalid(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: 2 ** 60 } }), 'condition.crosses');
    expectError(await api.post('/alerts', { video_id: 'nope', metric: 'views', condition: { crosses: 1 } }), 404, 'Video not found');
    const other = await subscribed();
    const theirs = await tracked(other.api);
    expectError(await api.post('/alerts', { video_id: theirs.id, metric: 'views', condition: { crosses: 1 } }), 403, 'Access denied');
  });

  test('crosses: one metric.alert when a snapshot reaches N (webhook and e-mail), none after', async () => {
    const { api, path } = await subscribed();
    const video = await tracked(api, undefined, 2);
    const first = expectStatus(await api.video(video.id), 200).snapshots[0];
    const threshold = (BigInt(first.views) + 1n).toString();
    const alert = expectStatus(await api.post('/alerts', { video_id: video.id, metric: 'views', condition: { crosses: threshold } }), 201);
    // The simulator's views grow every hour: the next snapshot reaches the threshold.
    await passHours(fixture.service, 1);
    const [request] = await fixture.receiver.waitFor(path, 1);
    const second = expectStatus(await api.video(video.id), 200).snapshots[1];
    assert.ok(BigInt(second.views) >= BigInt(threshold), 'the simulator grew');
    assert.equal(request!.json.type, 'metric.alert');
    assert.deepEqual(request!.verifiedWith, [true]);
    assert.equal(request!.json.data.alert_id, alert.id);
    assert.equal(request!.json.data.video_id, video.id);
    assert.equal(request!.json.data.value, second.views);
    assert.equal(request!.json.data.previous_value, first.views);
    assert.deepEqual(request!.json.data.snapshot, second);
    const mails = await until('the alert e-mail recorded', async () => {
      const found = await emailsOf(alert.id);
      return found.length > 0 ? found : undefined;
    }, 10_000, 20);
    assert.equal(mails.length, 1);
    assert.equal(mails[0]!.to, 'owner@example.test');
    assert.match(mails[0]!.subject, /views/);
    await passHours(fixture.service, 3);
    await webhooksQuiet(fixture.service);
    assert.equal(fixture.receiver.on(path).length, 1, 'once per crossing');
    assert.equal((await emailsOf(alert.id)).length, 1);
  });

  test('an alert on "all" videos watches every video of its mode only, each firing an e-mail of its own', async () => {
    const { org, api, path } = await subscribed();
    const alert = expectStatus(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: '1' } }), 201);
    const live = await tracked(api);
    const [request] = await fixture.receiver.waitFor(path, 1);
    assert.equal(request!.json.data.video_id, live.id);
    await tracked(client(fixture.service, org.testKey));
    await webhooksQuiet(fixture.service);
    assert.equal(fixture.receiver.on(path).length, 1, 'the test-mode video is not watched by a live alert');
    // A second video fires the alert at the same slot: its e-mail must not take the first one's file.
    await tracked(api);
    await fixture.receiver.waitFor(path, 2);
    const files = await until('both alert e-mails recorded', async () => {
      const { rows } = await fixture.service.db.pool.query(`SELECT file_name FROM notify.outbox WHERE message_id LIKE $1`, [`<${alert.id}.%`]);
      return rows.length === 2 ? rows.map((r) => r.file_name) : undefined;
    });
    assert.equal(new Set(files).size, 2, files.join(', '));
  });

  test('grows_pct_24h compares with the snapshot 24 h before, however long before the page, on both sides of the crossing', async () => {
    const { api, path } = await subscribed();
    const video = await tracked(api, undefined, 2);
    await passHours(fixture.service, 23);
    // Views never fall: 0 % holds at every snapshot with one 24 h older, the first being slot 24
    // (against slot 0, a day before the page that holds it).
    const first = expectStatus(await api.post('/alerts', { video_id: video.id, metric: 'views', condition: { grows_pct_24h: '0' } }), 201);
    await passHours(fixture.service, 1);
    const [request] = await fixture.receiver.waitFor(path, 1);
    const snapshots = expectStatus(await api.video(video.id), 200).snapshots;
    assert.equal(snapshots.length, 25);
    assert.equal(Date.parse(snapshots[24].snapshot_time) - Date.parse(snapshots[0].snapshot_time), 24 * 3_600_000, 'slot 0 is 24 h older than slot 24');
    assert.equal(request!.json.data.alert_id, first.id);
    assert.deepEqual(request!.json.data.snapshot, snapshots[24]);
    // At slot 25 it held at slot 24 too (against slot 0, 25 h before the page): no crossing, for
    // the alert that fired nor for one created since.
    const second = expectStatus(await api.post('/alerts', { video_id: video.id, metric: 'views', condition: { grows_pct_24h: '0' } }), 201);
    await passHours(fixture.service, 1);
    await webhooksQuiet(fixture.service);
    assert.deepEqual(fixture.receiver.on(path).map((r) => r.json.data.alert_id), [first.id], `${second.id} held at the snapshot before its first`);
  });
});

describe('metric alerts fire on the snapshots recorded while they existed, however late the reactor reads them', () => {
  test('an alert created after a snapshot does not fire on it', async () => {
    const { api, path } = await subscribed();
    await webhooksQuiet(fixture.service);
    const { before, alert } = await withReactorBehind(fixture.service, async () => {
      const before = await tracked(api);
      const alert = expectStatus(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: '1' } }), 201);
      return { before, alert };
    });
    // A video tracked after the alert fires it: the alert works, and left out only the snapshot before it.
    const after = await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    await webhooksQuiet(fixture.service);
    assert.deepEqual(fixture.receiver.on(path).map((r) => r.json.data.video_id), [after.id], `the first snapshot of ${before.id} predates the alert`);
    assert.equal((await emailsOf(alert.id)).length, 1);
  });

  test('an alert deleted after a snapshot fires on it, and on none after', async () => {
    const { org, api, path } = await subscribed();
    const alert = expectStatus(await api.post('/alerts', { video_id: 'all', metric: 'views', condition: { crosses: '1' } }), 201);
    await webhooksQuiet(fixture.service);
    const video = await withReactorBehind(fixture.service, async () => {
      const video = await tracked(api);
      const removed = await fixture.service.app.inject({ method: 'DELETE', url: `${API}/alerts/${alert.id}`, headers: { 'x-api-key': org.liveKey } });
      expectStatus(removed, 200);
      return video;
    });
    const [request] = await fixture.receiver.waitFor(path, 1);
    assert.deepEqual({ alert: request!.json.data.alert_id, video: request!.json.data.video_id }, { alert: alert.id, video: video.id });
    await tracked(api);
    await webhooksQuiet(fixture.service);
    assert.equal(fixture.receiver.on(path).length, 1, 'a deleted alert fires no more');
    assert.equal((await emailsOf(alert.id)).length, 1);
    // The deleted alert is neither listed nor found, though its row stays for the reactor.
    assert.deepEqual(expectStatus(await api.get('/alerts'), 200).alerts, []);
    const again = await fixture.service.app.inject({ method: 'DELETE', url: `${API}/alerts/${alert.id}`, headers: { 'x-api-key': org.liveKey } });
    expectError(again, 404, 'Alert not found');
  });
});
