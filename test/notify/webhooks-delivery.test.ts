// Webhook deliveries from the log to a real local receiver that checks every signature with
// the `standardwebhooks` reference verifier: payloads, retries on the service clock, Retry-After,
// 410, redirects, rotation (two signatures), order per video, test-mode isolation, webhook.test,
// the deliveries list, replay and recover, and the 5-day disable with its e-mail.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue, resumeFunded } from '../../src/collect/work.ts';
import { API, client, expectInvalid, expectStatus, newLink, passHours, tracked } from '../api/helpers.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { parseUsd } from '../../src/domain/money.ts';
import { streamIdOfWebhookTests, streamIdOfWebhooks } from '../../src/domain/webhooks.ts';
import { deliveryIdOf, recordDeliveries, type NewDelivery } from '../../src/notify/webhooks/deliveries.ts';
import { until } from '../support/wait.ts';
import { webhookFixture, webhooksQuiet } from '../support/webhook-receiver.ts';

const fixture = webhookFixture();

let paths = 0;
/** An organization, its API, and an endpoint on a fresh fixture.receiver path subscribed to `events`. */
async function subscribed(events: string[], mode: 'live' | 'test' = 'live') {
  const org = await fixture.service.organization({ usd: '100' });
  const api = client(fixture.service, mode === 'live' ? org.liveKey : org.testKey);
  const path = `/hook-${++paths}`;
  const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events }), 201);
  fixture.receiver.expect(path, endpoint.secret);
  return { org, api, path, endpoint };
}

/** Moves the fixture.service clock on and lets the dispatcher look at once (its timers run on wall time). */
function advance(ms: number): void {
  fixture.service.clock.advance(ms);
  fixture.service.webhooks!.dispatcher.kick();
}

async function deliveriesOf(api: ReturnType<typeof client>, endpointId: string, query = '') {
  return expectStatus(await api.get(`/webhooks/${endpointId}/deliveries${query}`), 200);
}

/**
 * Waits until the endpoint's newest delivery shows `status` with `attempts` attempts, its
 * attempt recorded: a pending one counts its attempt when claimed, and is only rescheduled
 * (a next attempt in the future) once the answer is recorded.
 */
async function deliveryState(api: ReturnType<typeof client>, endpointId: string, status: string, attempts: number) {
  return until(`a delivery of ${endpointId} ${status} after ${attempts} attempt(s)`, async () => {
    const [newest] = (await deliveriesOf(api, endpointId)).deliveries;
    if (!newest || newest.status !== status || newest.attempts !== attempts) return undefined;
    if (status === 'pending' && !(Date.parse(newest.next_attempt_at) > fixture.service.clock.now().getTime())) return undefined;
    return newest;
  }, 10_000, 20);
}

describe('webhook deliveries', () => {
  test('snapshot.created: signed (verified by standardwebhooks), the snapshot exactly as GET /videos/{id} shows it', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    const video = await tracked(api, newLink('tiktok'), 1);
    const [request] = await fixture.receiver.waitFor(path, 1);
    assert.deepEqual(request!.verifiedWith, [true]);
    assert.equal(request!.json.type, 'snapshot.created');
    const detail = expectStatus(await api.video(video.id), 200);
    assert.deepEqual(request!.json.data, { video_id: video.id, platform: 'tiktok', snapshot: detail.snapshots[0] });
    assert.equal(request!.json.timestamp, detail.snapshots[0].snapshot_time);
    assert.ok(Buffer.byteLength(request!.body) < 20 * 1024);
    // webhook-timestamp is wall time (receivers compare it with their clocks), in seconds.
    assert.ok(Math.abs(Number(request!.timestamp) - Date.now() / 1000) < 60);
    const delivered = await deliveryState(api, endpoint.id, 'delivered', 1);
    assert.equal(delivered.id, request!.id);
    assert.equal(delivered.event_type, 'snapshot.created');
    assert.equal(delivered.last_response_status, 200);
  });

  test('retries on the schedule (at once, 5 s, 5 min, 30 min) with the same webhook-id, then delivered', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    fixture.receiver.script(path, 500, 502, { status: 400 });
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    let pending = await deliveryState(api, endpoint.id, 'pending', 1);
    const wait1 = Date.parse(pending.next_attempt_at) - fixture.service.clock.now().getTime();
    assert.ok(wait1 >= 5_000 && wait1 <= 5_500, `first retry after 5 s (+ jitter): ${wait1}`);
    advance(4_000);
    await fixture.service.webhooks!.dispatcher.idle();
    assert.equal(fixture.receiver.on(path).length, 1, 'not retried before its time');
    advance(1_600);
    await fixture.receiver.waitFor(path, 2);
    pending = await deliveryState(api, endpoint.id, 'pending', 2);
    assert.equal(pending.last_response_status, 502);
    advance(5.6 * 60_000);
    await fixture.receiver.waitFor(path, 3);
    await deliveryState(api, endpoint.id, 'pending', 3);
    advance(34 * 60_000);
    const requests = await fixture.receiver.waitFor(path, 4);
    await deliveryState(api, endpoint.id, 'delivered', 4);
    assert.equal(new Set(requests.map((r) => r.id)).size, 1, 'one webhook-id across the retries');
    assert.ok(requests.every((r) => r.verifiedWith[0]));
  });

  test('Retry-After on 429 and 503 is honoured', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    fixture.receiver.script(path, { status: 429, headers: { 'retry-after': '120' } });
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    const pending = await deliveryState(api, endpoint.id, 'pending', 1);
    assert.equal(Date.parse(pending.next_attempt_at) - fixture.service.clock.now().getTime(), 120_000);
    advance(121_000);
    await fixture.receiver.waitFor(path, 2);
    await deliveryState(api, endpoint.id, 'delivered', 2);
  });

  test('410 Gone disables the endpoint; a redirect is not followed', async () => {
    const gone = await subscribed(['snapshot.created']);
    fixture.receiver.script(gone.path, 410);
    await tracked(gone.api);
    await fixture.receiver.waitFor(gone.path, 1);
    await until('the endpoint disabled after 410', async () => {
      const body = expectStatus(await gone.api.get(`/webhooks/${gone.endpoint.id}`), 200);
      return body.enabled === false && body.disabled_reason === 'gone' ? body : undefined;
    }, 10_000, 20);
    await deliveryState(gone.api, gone.endpoint.id, 'failed', 1);

    const moved = await subscribed(['snapshot.created']);
    fixture.receiver.script(moved.path, { status: 302, headers: { location: `${fixture.receiver.url}/elsewhere` } });
    await tracked(moved.api);
    await fixture.receiver.waitFor(moved.path, 1);
    const pending = await deliveryState(moved.api, moved.endpoint.id, 'pending', 1);
    assert.equal(pending.last_response_status, 302);
    assert.equal(fixture.receiver.on('/elsewhere').length, 0);
  });

  test('rotation: both secrets sign for 24 h of fixture.service time, then only the new one', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    const rotated = expectStatus(await api.post(`/webhooks/${endpoint.id}/rotate-secret`), 200);
    fixture.receiver.expect(path, endpoint.secret, rotated.secret);
    await tracked(api);
    const [during] = await fixture.receiver.waitFor(path, 1);
    assert.equal(during!.signature.split(' ').length, 2);
    assert.deepEqual(during!.verifiedWith, [true, true], 'the old and the new secret each verify');

    fixture.service.clock.advance(25 * HOUR_MS);
    await tracked(api);
    const [, later] = await fixture.receiver.waitFor(path, 2);
    assert.equal(later!.signature.split(' ').length, 1);
    assert.deepEqual(later!.verifiedWith, [false, true], 'only the new secret after 24 h');
  });

  test('a test key\'s endpoint gets only test-mode events, a live key\'s only live ones', async () => {
    const live = await subscribed(['snapshot.created'], 'live');
    const testApi = client(fixture.service, live.org.testKey);
    const testPath = `/hook-${++paths}`;
    const testEndpoint = expectStatus(await testApi.post('/webhooks', { url: fixture.receiver.url + testPath, events: ['snapshot.created'] }), 201);
    fixture.receiver.expect(testPath, testEndpoint.secret);
    const testVideo = await tracked(testApi);
    const [testRequest] = await fixture.receiver.waitFor(testPath, 1);
    assert.equal(testRequest!.json.data.video_id, testVideo.id);
    const liveVideo = await tracked(live.api);
    const [liveRequest] = await fixture.receiver.waitFor(live.path, 1);
    assert.equal(liveRequest!.json.data.video_id, liveVideo.id);
    await webhooksQuiet(fixture.service);
    assert.deepEqual(fixture.receiver.on(live.path).map((r) => r.json.data.video_id), [liveVideo.id]);
    assert.deepEqual(fixture.receiver.on(testPath).map((r) => r.json.data.video_id), [testVideo.id]);
  });

  test('per endpoint, the deliveries of one video keep their order, even across retries', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    // The first delivery is told to come back in 10 h: the hours below do not make it due.
    fixture.receiver.script(path, { status: 503, headers: { 'retry-after': '36000' } });
    const video = await tracked(api, newLink('youtube'), 1);
    await fixture.receiver.waitFor(path, 1);
    await deliveryState(api, endpoint.id, 'pending', 1);
    // Two more snapshots while the first waits for its retry: they wait behind it.
    for (let i = 0; i < 2; i++) {
      fixture.service.clock.advance(HOUR_MS);
      await collectDue(fixture.service.work);
    }
    await fixture.service.settle();
    await until('three deliveries recorded', async () => ((await deliveriesOf(api, endpoint.id)).deliveries.length === 3 ? true : undefined), 10_000, 20);
    await fixture.service.webhooks!.dispatcher.idle();
    assert.equal(fixture.receiver.on(path).length, 1, 'the later snapshots wait for the first');
    advance(10 * HOUR_MS);
    const requests = await fixture.receiver.waitFor(path, 4);
    const times = requests.map((r) => r.json.data.snapshot.snapshot_time);
    assert.equal(times[0], times[1], 'the first snapshot, then its retry');
    assert.deepEqual(times.slice(1), [...times.slice(1)].sort(), 'then in order');
    assert.ok(requests.every((r) => r.json.data.video_id === video.id));
  });

  test('tracking.completed, video.stopped and webhook.test', async () => {
    const { api, path, endpoint } = await subscribed(['tracking.completed', 'video.stopped']);
    const stopped = await tracked(api, newLink('youtube'), 1);
    expectStatus(await api.stop(stopped.id), 200);
    const [stop] = await fixture.receiver.waitFor(path, 1);
    assert.equal(stop!.json.type, 'video.stopped');
    assert.equal(stop!.json.data.video.id, stopped.id);
    assert.equal(stop!.json.data.video.status, 'completed');
    assert.equal(stop!.json.data.totals.snapshots, 1);
    assert.equal(stop!.json.data.video.snapshots, undefined);
    assert.match(stop!.json.data.final_metrics.views, /^\d+$/);

    expectStatus(await api.post(`/webhooks/${endpoint.id}/test`), 202);
    const [, probe] = await fixture.receiver.waitFor(path, 2);
    assert.equal(probe!.json.type, 'webhook.test');
    assert.deepEqual(probe!.verifiedWith, [true]);
  });

  test('ten webhook tests sent at once are each accepted and delivered, and leave the endpoints\' stream as it was', async () => {
    const { org, api, path, endpoint } = await subscribed(['snapshot.created']);
    const endpointsStream = () => fixture.service.store.readStream(streamIdOfWebhooks(org.orgId));
    const before = await endpointsStream();
    const answers = await Promise.all(Array.from({ length: 10 }, () => api.post(`/webhooks/${endpoint.id}/test`)));
    assert.deepEqual(answers.map((a) => a.statusCode), Array(10).fill(202), answers.map((a) => a.body).join('\n'));
    const probes = await fixture.receiver.waitFor(path, 10);
    assert.deepEqual(probes.map((p) => p.json.type), Array(10).fill('webhook.test'));
    // Every command on the endpoints reads that stream whole: the tests must not make it grow.
    assert.deepEqual((await endpointsStream()).map((e) => e.type), before.map((e) => e.type));
    assert.equal((await fixture.service.store.readStream(streamIdOfWebhookTests(org.orgId))).length, 10);
  });

  test('the deliveries list is newest first and cursor-paginated; replay sends again with the same webhook-id; recover re-sends failed ones', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    for (let i = 0; i < 3; i++) await tracked(api);
    await fixture.receiver.waitFor(path, 3);
    const first = await deliveriesOf(api, endpoint.id, '?limit=2');
    assert.equal(first.deliveries.length, 2);
    assert.equal(typeof first.next_cursor, 'string');
    const second = await deliveriesOf(api, endpoint.id, `?limit=2&cursor=${first.next_cursor}`);
    assert.equal(second.deliveries.length, 1);
    assert.equal(second.next_cursor, null);
    const all = [...first.deliveries, ...second.deliveries];
    assert.deepEqual(all.map((d: { created_at: string }) => d.created_at), all.map((d: { created_at: string }) => d.created_at).sort().reverse());
    const bad = await api.get(`/webhooks/${endpoint.id}/deliveries?cursor=forged`);
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().details[0].field, 'cursor');

    const oldest = second.deliveries[0];
    await until('the oldest delivered', async () => ((await deliveriesOf(api, endpoint.id)).deliveries.every((d: { status: string }) => d.status === 'delivered') ? true : undefined), 10_000, 20);
    expectStatus(await api.post(`/webhooks/${endpoint.id}/deliveries/${oldest.id}/replay`), 202);
    const requests = await fixture.receiver.waitFor(path, 4);
    assert.equal(requests[3]!.id, oldest.id);
    assert.equal((await api.post(`/webhooks/${endpoint.id}/deliveries/msg_nope/replay`)).statusCode, 404);

    // A delivery that fails all 8 attempts ends `failed`; recover sends it again.
    const failing = await subscribed(['snapshot.created']);
    fixture.receiver.script(failing.path, 500, 500, 500, 500, 500, 500, 500, 500);
    const since = fixture.service.clock.now().toISOString();
    await tracked(failing.api);
    for (let attempt = 1; attempt <= 8; attempt++) {
      await fixture.receiver.waitFor(failing.path, attempt);
      await deliveryState(failing.api, failing.endpoint.id, attempt === 8 ? 'failed' : 'pending', attempt);
      if (attempt < 8) advance(11 * HOUR_MS);
    }
    const recovered = expectStatus(await failing.api.post(`/webhooks/${failing.endpoint.id}/recover`, { since }), 202);
    assert.equal(recovered.recovered, 1);
    await fixture.receiver.waitFor(failing.path, 9);
    await deliveryState(failing.api, failing.endpoint.id, 'delivered', 1);
    for (const bad of ['yesterday', '2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-01-01T24:00:00Z']) {
      expectInvalid(await failing.api.post(`/webhooks/${failing.endpoint.id}/recover`, { since: bad }), 'since');
    }
    assert.equal(expectStatus(await failing.api.post(`/webhooks/${failing.endpoint.id}/recover`, { since: '2024-02-29T00:00:00+01:00' }), 202).recovered, 0);
  });

  test('a replay asked while the last attempt is in flight sends the delivery again after that attempt fails', async () => {
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    fixture.receiver.script(path, 500, 500, 500, 500, 500, 500, 500, { status: 500, hold: held });
    try {
      await tracked(api);
      for (let attempt = 1; attempt < 8; attempt++) {
        await fixture.receiver.waitFor(path, attempt);
        await deliveryState(api, endpoint.id, 'pending', attempt);
        advance(11 * HOUR_MS);
      }
      const [last] = await fixture.receiver.waitFor(path, 8).then((requests) => requests.slice(-1));
      expectStatus(await api.post(`/webhooks/${endpoint.id}/deliveries/${last!.id}/replay`), 202);
    } finally {
      release();
    }
    // The 8th attempt's failure does not end it: the replay sends it again, on a fresh schedule.
    const requests = await fixture.receiver.waitFor(path, 9);
    assert.equal(requests[8]!.id, requests[0]!.id);
    await deliveryState(api, endpoint.id, 'delivered', 1);
  });

  test('an endpoint whose deliveries all failed for 5 days is disabled and the organization e-mailed once, also when the first write of the e-mail fails', async (t) => {
    const pool = fixture.service.db.pool;
    // The first write of such an e-mail to the outbox fails (as a database error would).
    await pool.query(`CREATE SEQUENCE test_disabled_mail_writes;
      CREATE FUNCTION test_fail_first_disabled_mail() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.message_id LIKE '%.disabled.%' AND nextval('test_disabled_mail_writes') = 1 THEN RAISE EXCEPTION 'the first write of a disabled e-mail fails (test)'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_fail_first_disabled_mail BEFORE INSERT ON notify.outbox FOR EACH ROW EXECUTE FUNCTION test_fail_first_disabled_mail();`);
    t.after(() => pool.query(`DROP TRIGGER test_fail_first_disabled_mail ON notify.outbox; DROP FUNCTION test_fail_first_disabled_mail(); DROP SEQUENCE test_disabled_mail_writes;`));
    const { api, path, endpoint } = await subscribed(['snapshot.created']);
    fixture.receiver.script(path, ...Array(20).fill(500));
    await tracked(api);
    await fixture.receiver.waitFor(path, 1);
    await deliveryState(api, endpoint.id, 'pending', 1);
    fixture.service.clock.advance(5 * 24 * HOUR_MS + 60_000);
    expectStatus(await api.post(`/webhooks/${endpoint.id}/test`), 202);
    await fixture.receiver.waitFor(path, 2);
    await until('the endpoint disabled after 5 days of failures', async () => {
      const body = expectStatus(await api.get(`/webhooks/${endpoint.id}`), 200);
      return body.enabled === false && body.disabled_reason === 'failing' ? body : undefined;
    }, 10_000, 20);
    const recorded = async () => (await pool.query(`SELECT message FROM notify.outbox WHERE message_id LIKE $1`, [`<${endpoint.id}.disabled.%`])).rows;
    await until('the e-mail about the disabled endpoint recorded', async () => ((await recorded()).length > 0 ? true : undefined), 20_000, 50);
    await webhooksQuiet(fixture.service);
    const rows = await recorded();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].message.to, 'owner@example.test');
    assert.ok(rows[0].message.text.includes(`${endpoint.id} (${fixture.receiver.url}${path}) has failed for 5 days`), rows[0].message.text);
  });

  test('at most 10 in flight per endpoint; a slow endpoint does not hold up another organization\'s', async (t) => {
    const slow = await subscribed(['snapshot.created']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    t.after(() => release());
    fixture.receiver.script(slow.path, ...Array.from({ length: 12 }, () => ({ status: 200, hold: held })));
    for (let i = 0; i < 12; i++) await tracked(slow.api);
    await fixture.receiver.waitFor(slow.path, 10);
    const other = await subscribed(['snapshot.created']);
    await tracked(other.api);
    await fixture.receiver.waitFor(other.path, 1);
    assert.equal(fixture.receiver.on(slow.path).length, 10, 'ten held, the other two wait for a place');
    release();
    await fixture.receiver.waitFor(slow.path, 12);
    await until('all twelve delivered', async () => {
      const list = await deliveriesOf(slow.api, slow.endpoint.id);
      return list.deliveries.length === 12 && list.deliveries.every((d: { status: string }) => d.status === 'delivered') ? true : undefined;
    }, 10_000, 20);
  });

  test("one organization's 20 endpoints at their 10 each leave places for another organization's endpoint", async (t) => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    t.after(() => release());
    const busy = await fixture.service.organization({ usd: '100' });
    const busyApi = client(fixture.service, busy.liveKey);
    const deliveries: NewDelivery[] = [];
    const busyPaths: string[] = [];
    for (let e = 0; e < 20; e++) {
      const path = `/hook-${++paths}`;
      busyPaths.push(path);
      const endpoint = expectStatus(await busyApi.post('/webhooks', { url: fixture.receiver.url + path, events: ['snapshot.created'] }), 201);
      fixture.receiver.script(path, ...Array.from({ length: 10 }, () => ({ status: 200, hold: held })));
      for (let i = 0; i < 10; i++) {
        const eventId = `${endpoint.id}-event-${i}`;
        const body = JSON.stringify({ type: 'webhook.test', timestamp: fixture.service.clock.now().toISOString(), data: {} });
        deliveries.push({ deliveryId: deliveryIdOf(eventId, 'webhook.test', endpoint.id), endpointId: endpoint.id, orgId: busy.orgId, eventId, eventType: 'webhook.test', videoId: null, body, createdAt: fixture.service.clock.now() });
      }
    }
    await recordDeliveries(fixture.service.db.pool, deliveries);
    fixture.service.webhooks!.dispatcher.kick();
    const busyRequests = () => fixture.receiver.received.filter((r) => busyPaths.includes(r.path)).length;
    // All the process lets them have (200 places, less the 10 kept for endpoints with nothing in flight).
    await until('the busy organization\'s sends to take their places', () => (busyRequests() >= 190 ? true : undefined), 20_000, 20);
    const other = await subscribed(['snapshot.created']);
    expectStatus(await other.api.post(`/webhooks/${other.endpoint.id}/test`), 202);
    await fixture.receiver.waitFor(other.path, 1, 5_000);
    release();
    await until('every delivery of the busy organization sent', () => (busyRequests() >= 200 ? true : undefined), 20_000, 20);
    await webhooksQuiet(fixture.service);
  });

  test('tracking.failed when the platform deletes the video; tracking.paused and tracking.resumed with the funds', async () => {
    const failing = await subscribed(['tracking.failed']);
    const deleted = await tracked(failing.api, newLink('youtube', '410'), 1);
    await passHours(fixture.service, 4);
    const [failed] = await fixture.receiver.waitFor(failing.path, 1);
    assert.equal(failed!.json.type, 'tracking.failed');
    assert.equal(failed!.json.data.video.id, deleted.id);
    assert.equal(failed!.json.data.video.status, 'error');
    assert.equal(failed!.json.data.video.is_deleted, true);

    const org = await fixture.service.organization({ usd: '0.40' });
    const api = client(fixture.service, org.liveKey);
    const path = `/hook-${++paths}`;
    const endpoint = expectStatus(await api.post('/webhooks', { url: fixture.receiver.url + path, events: ['tracking.paused', 'tracking.resumed'] }), 201);
    fixture.receiver.expect(path, endpoint.secret);
    const first = await tracked(api, newLink('youtube'), 1);
    const second = await tracked(api, newLink('youtube'), 1);
    await passHours(fixture.service, 14); // two videos spend 0.03 an hour: 0.40 runs out
    const [paused] = await fixture.receiver.waitFor(path, 1);
    assert.equal(paused!.json.type, 'tracking.paused');
    assert.ok([first.id, second.id].includes(paused!.json.data.video.id));
    assert.equal(paused!.json.data.video.status, 'paused');
    await deposit(fixture.service.store, fixture.service.clock, org.orgId, parseUsd('10')!, 'more');
    await fixture.service.settle();
    await resumeFunded(fixture.service.work); // the scheduler's job that resumes what a deposit pays for
    const resumed = await until('tracking.resumed', () => fixture.receiver.on(path).find((r) => r.json.type === 'tracking.resumed'), 10_000, 20);
    assert.equal(resumed.json.data.video.status, 'monitoring');
    assert.ok(fixture.receiver.on(path).every((r) => r.verifiedWith[0]));
  });

  test('nothing is sent to an endpoint that is not subscribed to the event type', async () => {
    const { api, path } = await subscribed(['tracking.completed']);
    await tracked(api);
    await webhooksQuiet(fixture.service);
    assert.equal(fixture.receiver.on(path).length, 0);
  });
});

void API;
