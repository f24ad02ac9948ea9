// The dashboard's pages as HTML: platform text and anything typed is shown as text, never as
// markup; the labels, test ids and data-points the browser contract names are there; money
// is formatted from integer micros.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiDeps } from '../../src/api/context.ts';
import { ManualClock, HOUR_MS } from '../../src/clock.ts';
import { keysPage } from '../../src/dashboard/pages/keys.ts';
import { Html, html } from '../../src/dashboard/pages/html.ts';
import { loginPage, invitePage } from '../../src/dashboard/pages/auth-pages.ts';
import { usd, count } from '../../src/dashboard/pages/format.ts';
import type { Viewer } from '../../src/dashboard/pages/layout.ts';
import { videoPage } from '../../src/dashboard/pages/video.ts';
import { webhookPage, webhooksPage } from '../../src/dashboard/pages/webhooks.ts';
import type { WebhookListing } from '../../src/dashboard/pages/model.ts';
import { billingCsv, billingPage } from '../../src/dashboard/pages/billing.ts';
import { emptyLedger } from '../../src/audit/ledger.ts';
import type { SnapshotRow, VideoRow } from '../../projections/queries.ts';

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
const viewer: Viewer = { email: 'a@example.test', role: 'owner', orgName: `Org ${HOSTILE}`, csrf: new Html('<input type="hidden" name="_csrf" value="t">') };
const clock = new ManualClock(new Date('2026-11-01T00:00:00Z'));
const deps = { clock } as unknown as ApiDeps;

function video(overrides: Partial<VideoRow> = {}): VideoRow {
  const start = clock.now();
  return {
    video_id: 'v1', job_id: 'job1', org_id: 'org1', mode: 'live', video_link: 'https://www.youtube.com/watch?v=dQw4w9WgXcQ', platform: 'youtube',
    status: 'monitoring', duration_days: 30, monitoring_started: start, ends_at: new Date(start.getTime() + 30 * 24 * HOUR_MS), ended_at: null,
    is_deleted: false, current_metadata: { title: HOSTILE, creator: HOSTILE, description: HOSTILE }, created_at: start, last_updated: start, ...overrides,
  };
}

function snapshots(n: number): SnapshotRow[] {
  return Array.from({ length: n }, (_, slot) => ({
    slot, snapshot_id: `s${slot}`, snapshot_time: new Date(clock.now().getTime() + slot * HOUR_MS), provider: 'youtube-data-api',
    views: String(1000 + slot * 10), likes: String(slot), comments: String(slot), shares: null, saves: null, retweets: null, replies: null,
  }));
}

/** No tag of the hostile text survives: every `<` of it arrives as &lt;. */
function assertInert(page: string) {
  assert.ok(!page.includes('<script>alert'), 'a script tag from platform text reached the page');
  assert.ok(!page.includes('<img src=x'), 'an img tag from platform text reached the page');
  assert.ok(page.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'), 'the hostile text is shown, escaped');
}

describe('dashboard pages', () => {
  it('escape platform text and the organization name everywhere on the video page', () => {
    const page = videoPage(deps, viewer, video(), snapshots(3));
    assertInert(page);
    assert.ok(!/<script(?![^>]*(src=|type="application\/json"))/.test(page), 'the only scripts are files and the JSON data block');
  });

  it('draw one chart per metric the platform reports, with the number of points', () => {
    const page = videoPage(deps, viewer, video(), snapshots(720));
    for (const metric of ['views', 'likes', 'comments']) {
      assert.match(page, new RegExp(`data-testid="chart-${metric}"[^>]*data-points="720"`), `chart-${metric} with 720 points`);
    }
    assert.doesNotMatch(page, /chart-shares|chart-saves|chart-retweets/, 'no chart for a metric YouTube lacks');
    const data = JSON.parse(/<script type="application\/json" id="chart-data">(.*?)<\/script>/s.exec(page)![1]!);
    assert.equal(data.views.x.length, 720);
    assert.equal(data.views.y[719], 1000 + 719 * 10);
    assert.match(page, /<a class="button" href="\/videos\/v1\/snapshots.csv" download>Download CSV<\/a>/);
  });

  it('offer Stop tracking for a monitored video only, as the API allows', () => {
    assert.ok(videoPage(deps, viewer, video(), snapshots(1)).includes('Stop tracking'));
    const paused = videoPage(deps, viewer, video({ status: 'paused' }), snapshots(1));
    assert.ok(!paused.includes('Stop tracking'), 'a paused video cannot be stopped');
    assert.ok(paused.includes('Tracking resumes after a deposit'));
  });

  it('keep text out of the chart data block from closing it', () => {
    const page = videoPage(deps, viewer, video({ current_metadata: { title: '</script><script>alert(1)</script>' } }), snapshots(2));
    assert.equal(page.split('</script>').length - 1, page.split('<script').length - 1, 'every script element closes where it opened');
    assert.ok(!page.includes('<script>alert(1)'));
  });

  it('label the forms as the browser contract names them', () => {
    const login = loginPage({ csrf: viewer.csrf, email: `"><b>x` });
    assert.match(login, /<label for="email">Email<\/label>/);
    assert.match(login, /<label for="password">Password<\/label>/);
    assert.match(login, /<button type="submit">Sign in<\/button>/);
    assert.ok(login.includes('value="&quot;&gt;&lt;b&gt;x"'), 'a typed e-mail is put back escaped');
    const invite = invitePage({ csrf: viewer.csrf, token: 't"k', email: HOSTILE });
    assertInert(invite);
    assert.match(invite, /<label for="confirm">Confirm password<\/label>/);
    assert.match(invite, /<button type="submit">Set password<\/button>/);
    const keys = keysPage(viewer, {
      keys: [{ keyId: 'k1', name: HOSTILE, mode: 'live', prefix: 'vt_live_ab', createdAt: clock.now(), createdBy: 'operator', lastUsedAt: null, requests: 12345, revoked: false, videos: [{ videoId: 'v1', title: HOSTILE }] }],
      created: { name: 'new', apiKey: 'vt_live_secret' },
    });
    assertInert(keys);
    assert.match(keys, /data-testid="new-key-value"[^>]*>vt_live_secret</);
    assert.match(keys, />Last used<\/th>/);
    assert.match(keys, />Requests<\/th>/);
    assert.match(keys, />Delete<\/button>/);
    assert.match(keys, />Delete key<\/button>/);
    assert.match(keys, /12,345/);
    assert.match(keys, /<input type="radio" name="mode" value="live" checked> Live<\/label>/);
  });

  it('format money from integer micros without floating point', () => {
    assert.equal(usd(10_800_000), '$10.80');
    assert.equal(usd(15_000), '$0.015');
    assert.equal(usd(-3_000_000), '-$3.00');
    assert.equal(usd(1_234_567_890_123), '$1,234,567.890123');
    assert.equal(count('12345678901234567890'), '12,345,678,901,234,567,890');
  });

  it('keep a ledger reference from reading as a spreadsheet formula', () => {
    const ledger = emptyLedger('org1');
    ledger.entries.push({ at: '2026-11-01T00:00:00.000Z', kind: 'deposit', amount: 25_000_000, reference: '=HYPERLINK("x")' });
    assert.equal(billingCsv(ledger), 'time,kind,amount_usd,snapshots,reference\r\n2026-11-01T00:00:00.000Z,deposit,25,,"\'=HYPERLINK(""x"")"\r\n');
  });

  it('name a charge of one snapshot in the singular on the billing page', () => {
    const ledger = emptyLedger('org1');
    ledger.entries.push({ at: '2026-11-01T01:00:00.000Z', kind: 'charge', amount: 15_000, snapshots: 1 });
    ledger.entries.push({ at: '2026-11-01T02:00:00.000Z', kind: 'charge', amount: 30_000, snapshots: 2 });
    const page = billingPage(viewer, ledger, clock.now());
    assert.match(page, /Charge for 1 snapshot</);
    assert.match(page, /Charge for 2 snapshots</);
  });

  it('html`` escapes what it is given and passes Html through', () => {
    assert.equal(html`<p>${'<b>'}${new Html('<i>ok</i>')}${null}${[1, '<', 2]}</p>`.text, '<p>&lt;b&gt;<i>ok</i>1&lt;2</p>');
  });

  it("show a webhook endpoint's URL, description and the typed form as text, and the secret once with its test id", () => {
    const webhook: WebhookListing = {
      endpointId: 'wh_1', url: `https://example.com/?q=${HOSTILE}`, events: ['snapshot.created'], description: HOSTILE, mode: 'test',
      enabled: false, disabledReason: 'gone', createdAt: clock.now(),
    };
    const list = webhooksPage(viewer, { webhooks: [webhook], secret: { url: webhook.url, secret: 'whsec_abc' }, form: { url: HOSTILE, events: ['balance.low'], description: HOSTILE, mode: 'test' }, error: HOSTILE });
    assertInert(list);
    assert.match(list, /data-testid="new-webhook-secret"[^>]*>whsec_abc</);
    assert.match(list, /answered 410 Gone/, 'why it is disabled, in words');
    assert.match(list, /value="balance.low" checked/);
    for (const label of ['URL', 'Description', 'Live', 'Test', 'snapshot.created', 'metric.alert']) assert.match(list, new RegExp(`<label[^>]*>[^]*?${label.replace('.', '\\.')}`));
    const one = webhookPage(viewer, {
      webhook, limit: 50, now: clock.now(),
      deliveries: [{ deliveryId: 'd1', eventType: 'webhook.test', status: 'failed', attempts: 3, lastStatus: 500, nextAttemptAt: null, createdAt: clock.now() }],
    });
    assertInert(one);
    assert.match(one, />failed</);
    assert.match(one, /HTTP 500/);
    assert.doesNotMatch(one, /whsec_/);
    // The edit form starts from the endpoint as it is; the recover form from a day before now (UTC, to the minute).
    assert.match(one, /<input id="edit-url" name="url" type="url"[^>]*value="https:\/\/example\.com\/\?q=&lt;script&gt;/);
    assert.match(one, /value="snapshot.created" checked/);
    assert.doesNotMatch(one, /value="balance.low" checked/);
    assert.match(one, /<input id="recover-since" name="since" type="datetime-local" required value="2026-10-31T00:00"/);
    assert.match(one, /enable it first/, 'a disabled endpoint: recovered deliveries would fail again at once');
    for (const label of ['URL', 'Description', 'Failed since \\(UTC\\)', 'tracking.completed']) assert.match(one, new RegExp(`<label[^>]*>[^]*?${label.replace('.', '\\.')}`));
    // Refused: what was typed, not the endpoint.
    const refused = webhookPage(viewer, { webhook, limit: 50, now: clock.now(), deliveries: [], edit: { url: HOSTILE, events: ['balance.low'], description: HOSTILE }, since: '2026-10-01T12:34', error: HOSTILE });
    assertInert(refused);
    assert.match(refused, /id="edit-url"[^>]*value="&lt;script&gt;/);
    assert.match(refused, /value="balance.low" checked/);
    assert.doesNotMatch(refused, /value="snapshot.created" checked/);
    assert.match(refused, /id="recover-since"[^>]*value="2026-10-01T12:34"/);
  });
});
