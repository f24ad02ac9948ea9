// Reactor: turns log events into webhook deliveries. It follows the log from its own
// checkpoint and records each page's deliveries (one per event and subscribed endpoint) before
// it moves that checkpoint past the page: a restart reads the page again, and a delivery's id
// (from its event and endpoint) keeps it from being recorded twice. Nothing is recorded for an
// event the log does not hold. The dispatcher sends them once committed.
// Collection never waits for any of this: the reactor only reads the log, and writes in short
// transactions (RECORD_CHUNK says why that matters).
import type { Pool } from 'pg';
import { Subscription, concatMap, from } from 'rxjs';
import type { Clock } from '../../clock.ts';
import { withTransaction } from '../../db/pool.ts';
import type { AlertMetric } from '../../domain/alerts.ts';
import type { SnapshotRecorded } from '../../domain/video.ts';
import type { UrlPolicy } from '../../domain/webhook-url.ts';
import type { WebhookEndpointDisabled } from '../../domain/webhooks.ts';
import { comparePositions, type EventStore, type Position, type RecordedEvent } from '../../eventstore/port.ts';
import {
  alertsOfOrganizations,
  enabledWebhookEndpoints,
  findOrganizations,
  readSnapshotsForAlerts,
  readWebhookEndpoint,
  readUsage,
  readSnapshotVideos,
  readVideos,
  snapshotTotals,
  type MetricAlertRow,
  type LoggedWebhookEndpointRow,
  type SnapshotVideo,
} from '../../../projections/queries.ts';
import type { ProjectionWatcher } from '../../../projections/watcher.ts';
import { createMailer, type MailOptions } from '../mailer.ts';
import { OutboxSender, recordMessages, type OutboxMessage } from '../outbox.ts';
import { deliveryIdOf, recordDeliveries, type NewDelivery } from './deliveries.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { alertBody, alertEmail, alertsOn, firingsOf } from './metric-alerts.ts';
import { balanceChangesOf, watchBalances, type BalanceCandidate, type BalanceChanges } from './low-balance.ts';
import { bodyOf, causeOf, dataOf, snapshotCreatedData, type VideoFacts, type WebhookCause } from './payloads.ts';
import type { SecretBox } from './secret-box.ts';
import { raceDeadline } from '../timers.ts';
import { REACTOR_READ_INTERVAL_MS, advanceCheckpoint, readCheckpoint } from '../checkpoint.ts';

export interface WebhookReactorDeps {
  store: EventStore;
  pool: Pool;
  /** Connections that commit without waiting for the disk: the dispatcher's claims and marks (see DispatcherDeps), and the reactor's writes that a later commit makes durable. */
  sendPool?: Pool;
  watcher: ProjectionWatcher;
  clock: Clock;
  wall: Clock;
  timeScale: number;
  box: SecretBox;
  policy: UrlPolicy;
  /** Where the e-mail of an endpoint disabled after 5 days goes (through the outbox). */
  mail: MailOptions;
  post?: ConstructorParameters<typeof WebhookDispatcher>[0]['post'];
  collecting?: ConstructorParameters<typeof WebhookDispatcher>[0]['collecting'];
  retentionMs?: ConstructorParameters<typeof WebhookDispatcher>[0]['retentionMs'];
}

const RETRY_MS = 5_000;
/**
 * Deliveries per write. Readers of the log see nothing appended after a write transaction began
 * until it ends (the horizon, src/eventstore/postgres.ts), so one write of a page's 5,000
 * deliveries as rows (about 100 ms) held back every reader (the projector, read-your-writes)
 * that long; as batches, 1,000 at a time, about 4 ms.
 */
const RECORD_CHUNK = 1_000;
/** How long a page waits for the read models (endpoints, videos, usage) to reach it before it is read again. */
const READ_MODEL_WAIT_MS = 10_000;
/** Events that change who gets what: the endpoints (and their subscriptions) and the metric alerts. */
const TARGET_CHANGES = new Set([
  'WebhookEndpointCreated',
  'WebhookEndpointUpdated',
  'WebhookEndpointDisabled',
  'WebhookEndpointDeleted',
  'MetricAlertCreated',
  'MetricAlertDeleted',
]);

export class WebhookReactor {
  private subscription: Subscription | null = null;
  private inFlight: Promise<void> = Promise.resolve();
  private retry: NodeJS.Timeout | null = null;
  private stopped = false;
  private mailSender: OutboxSender | null = null;
  private closeMailer: () => void = () => undefined;
  readonly dispatcher: WebhookDispatcher;
  /** Where writes that need not wait for the disk go (see `sendPool`). */
  private readonly asyncPool: Pool;
  private onError: (error: unknown) => void = () => undefined;
  /**
   * Whether a change of targets read from the log may not be in the read models yet: true from
   * start (the log before the checkpoint is not seen), and after a page that holds one, until a
   * page has waited for the read models to reach it.
   */
  private targetsUnprojected = true;

  constructor(private readonly deps: WebhookReactorDeps) {
    this.asyncPool = deps.sendPool ?? deps.pool;
    this.dispatcher = new WebhookDispatcher({
      pool: deps.pool,
      sendPool: deps.sendPool,
      store: deps.store,
      clock: deps.clock,
      wall: deps.wall,
      timeScale: deps.timeScale,
      box: deps.box,
      policy: deps.policy,
      post: deps.post,
      collecting: deps.collecting,
      retentionMs: deps.retentionMs,
      onError: (error) => this.onError(error),
    });
  }

  async start(onError: (error: unknown) => void): Promise<void> {
    this.onError = onError;
    this.stopped = false;
    this.targetsUnprojected = true;
    if (!this.mailSender) {
      const mailer = createMailer(this.deps.mail);
      this.mailSender = new OutboxSender(this.deps.pool, mailer, onError);
      this.closeMailer = () => mailer.close();
    }
    const from$ = await readCheckpoint(this.deps.pool, 'webhooks.checkpoint');
    // Stopped while the checkpoint was read (a restart after a failure): no subscription after stop().
    if (this.stopped) return;
    // What was recorded but not sent before a restart goes first.
    this.dispatcher.kick();
    this.inFlight = Promise.resolve();
    // Pages as large as the projector's: a page is one transaction, and a burst of snapshots
    // (every video due at the top of the hour) is recorded at the pace the projector keeps.
    this.subscription = this.deps.store
      .subscribeAll(from$, { batchSize: 5_000, ready: () => this.inFlight, minReadIntervalMs: REACTOR_READ_INTERVAL_MS })
      .pipe(concatMap((page) => from((this.inFlight = this.handlePage(page)))))
      .subscribe({ error: (error) => this.failed(error) });
  }

  private failed(error: unknown): void {
    if (this.stopped) return;
    this.onError(error);
    this.subscription?.unsubscribe();
    this.subscription = null;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.stopped) this.start(this.onError).catch((failure: unknown) => this.failed(failure));
    }, RETRY_MS);
    this.retry.unref();
  }

  private async handlePage(page: RecordedEvent[]): Promise<void> {
    if (page.length === 0) return;
    const last = page[page.length - 1]!.position;
    const causes = page.map(causeOf).filter((c): c is WebhookCause => c !== null);
    if (page.some((e) => TARGET_CHANGES.has(e.type))) this.targetsUnprojected = true;
    const balance = balanceChangesOf(page);
    const prepared = causes.length > 0 || balance.spenders.size > 0 ? await this.prepare(causes, balance, last) : { deliveries: [], candidates: [], messages: [] };
    const messages = [...prepared.messages, ...(await this.disabledEmails(page))];
    const nothingToWrite =
      prepared.deliveries.length === 0 && prepared.candidates.length === 0 && messages.length === 0 && balance.thresholds.size === 0 && balance.deposits.size === 0;
    if (nothingToWrite) {
      // Most pages (no endpoint subscribed to what they hold) move only the checkpoint: one
      // statement, on the connections that do not wait for the disk. A checkpoint a crash loses
      // only means pages read again, and a page read again records nothing twice.
      await advanceCheckpoint(this.asyncPool, 'webhooks.checkpoint', last);
      return;
    }
    // On the connections that do not wait for the disk: the checkpoint's commit below does, and
    // makes these durable with it; a crash before it means the page is read and recorded again.
    for (let i = 0; i < prepared.deliveries.length; i += RECORD_CHUNK) {
      await recordDeliveries(this.asyncPool, prepared.deliveries.slice(i, i + RECORD_CHUNK));
      this.dispatcher.kick();
    }
    // What depends on a balance is decided and recorded with the checkpoint: a page read again
    // would see the balance it changed, not the crossing.
    let lowBalance = 0;
    await withTransaction(this.deps.pool, async (client) => {
      const deliveries = await watchBalances(client, balance, prepared.candidates, this.deps.clock.now());
      await recordDeliveries(client, deliveries);
      await recordMessages(client, messages);
      lowBalance = deliveries.length;
      await advanceCheckpoint(client, 'webhooks.checkpoint', last);
    });
    if (lowBalance > 0) this.dispatcher.kick();
    if (messages.length > 0) this.mailSender?.kick();
  }

  /**
   * The e-mails of the page's endpoints disabled after 5 days of failures, recorded with the
   * checkpoint: a page read again records each once more under the same Message-ID, which the
   * outbox keeps once (sent or not).
   */
  private async disabledEmails(page: RecordedEvent[]): Promise<OutboxMessage[]> {
    const disabled = page
      .filter((e) => e.type === 'WebhookEndpointDisabled')
      .map((e) => e.data as WebhookEndpointDisabled['data'])
      .filter((d) => d.reason === 'failing');
    if (disabled.length === 0) return [];
    const orgs = await findOrganizations(this.deps.pool, [...new Set(disabled.map((d) => d.orgId))]);
    const messages: OutboxMessage[] = [];
    for (const d of disabled) {
      const org = orgs.get(d.orgId);
      if (!org) continue;
      const endpoint = await readWebhookEndpoint(this.deps.pool, d.endpointId);
      messages.push(endpointDisabledEmail(d, endpoint?.url ?? null, org, this.deps.mail.from));
    }
    return messages;
  }

  /** Until the read models hold the page at `last`; failing the page when they do not in time. */
  private async waitForReadModels(last: Position): Promise<void> {
    if (!(await this.deps.watcher.waitFor(last, READ_MODEL_WAIT_MS))) throw new Error('read models did not reach the page of webhook events in time');
  }

  /**
   * The page's deliveries (but balance.low's, decided in the transaction) and the organizations
   * whose balance to look at. Organizations without an endpoint for these events cost one query.
   */
  private async prepare(
    causes: WebhookCause[],
    balance: BalanceChanges,
    last: Position,
  ): Promise<{ deliveries: NewDelivery[]; candidates: BalanceCandidate[]; messages: OutboxMessage[] }> {
    const { pool } = this.deps;
    // Who gets the page is decided on read models that hold every change of targets before it.
    // Read earlier, an endpoint created, enabled or subscribed just before these events (its
    // change not yet projected) would miss them for good, as the checkpoint then moves past the
    // page; and one disabled or deleted just before would still get them. Only such a change
    // not known to be projected costs a wait: a burst of snapshots does not wait for the
    // projector page by page. Not there in time: the page is read again later, from the
    // checkpoint where it stays.
    if (this.targetsUnprojected) {
      await this.waitForReadModels(last);
      this.targetsUnprojected = false;
    }
    const orgIds = [...new Set([...causes.map((c) => c.orgId), ...balance.spenders.keys()])];
    const endpoints = await enabledWebhookEndpoints(pool, orgIds);
    const endpointsOf = new Map<string, LoggedWebhookEndpointRow[]>();
    for (const e of endpoints) {
      const ofOrg = endpointsOf.get(e.org_id);
      if (ofOrg) ofOrg.push(e);
      else endpointsOf.set(e.org_id, [e]);
    }
    const targeted = causes
      .map((cause) => ({ cause, targets: endpointsOf.get(cause.orgId)?.filter((e) => subscribed(e, cause)) ?? [] }))
      .filter((t) => t.targets.length > 0);
    const watching = [...balance.spenders].map(([orgId, event]) => ({
      orgId,
      event,
      endpoints: endpoints.filter((e) => e.org_id === orgId && e.mode === 'live' && e.events.includes('balance.low') && comparePositions(e.created, event.position) < 0),
    })).filter((w) => w.endpoints.length > 0);
    const snapshots = causes.filter((c) => c.event.type === 'SnapshotRecorded');
    const alerts = snapshots.length > 0 ? await alertsOfOrganizations(pool, [...new Set(snapshots.map((c) => c.orgId))], snapshots[0]!.event.position) : [];
    const watched = alerts.length > 0 ? snapshots.map((c) => ({ cause: c, alerts: alertsOn(c.event, alerts) })).filter((w) => w.alerts.length > 0) : [];
    if (targeted.length === 0 && watching.length === 0 && watched.length === 0) return { deliveries: [], candidates: [], messages: [] };
    // Videos and usage come from the read models, which must hold this page; but a page of
    // nothing but snapshot.created needs only its videos' platforms and job ids, which never
    // change once a video is there: it waits only for a video not there yet. (At a collection
    // burst the projector is still applying the page: waiting for it put the two in a row.)
    const onlySnapshots = watching.length === 0 && watched.length === 0 && targeted.every((t) => t.cause.type === 'snapshot.created');
    let described = onlySnapshots ? await this.factsOf(targeted.map((t) => t.cause)) : null;
    if (!described || targeted.some((t) => !described!.snapshotVideos.has(t.cause.videoId!))) {
      await this.waitForReadModels(last);
      described = await this.factsOf(targeted.map((t) => t.cause));
    }
    const { facts, snapshotVideos } = described;
    const candidates: BalanceCandidate[] = [];
    for (const w of watching) {
      const usage = await readUsage(pool, w.orgId);
      if (usage) candidates.push({ ...w, usage });
    }
    const deliveries: NewDelivery[] = [];
    const now = this.deps.clock.now();
    for (const { cause, targets } of targeted) {
      let data: Record<string, unknown>;
      if (cause.type === 'snapshot.created') {
        const video = snapshotVideos.get(cause.videoId!);
        // A video the read model lost (parked) cannot be described: its events are not sent.
        if (!video) continue;
        data = snapshotCreatedData(cause, video);
      } else {
        const videoFacts = cause.videoId ? facts.get(cause.videoId) ?? null : null;
        if (cause.videoId && !videoFacts) continue;
        data = dataOf(cause, videoFacts);
      }
      const body = bodyOf(cause.type, cause.timestamp, data);
      for (const endpoint of targets) {
        deliveries.push({
          deliveryId: deliveryIdOf(cause.event.id, cause.type, endpoint.endpoint_id),
          endpointId: endpoint.endpoint_id,
          orgId: cause.orgId,
          eventId: cause.event.id,
          eventType: cause.type,
          videoId: cause.videoId,
          body,
          createdAt: now,
        });
      }
    }
    const fired = await this.alertsFired(watched, endpoints);
    return { deliveries: [...deliveries, ...fired.deliveries], candidates, messages: fired.messages };
  }

  /** metric.alert: the firings of the page's snapshots, as deliveries and e-mails. */
  private async alertsFired(watched: Array<{ cause: WebhookCause; alerts: MetricAlertRow[] }>, endpoints: readonly LoggedWebhookEndpointRow[]) {
    const deliveries: NewDelivery[] = [];
    const messages: OutboxMessage[] = [];
    if (watched.length === 0) return { deliveries, messages };
    const { pool } = this.deps;
    const videoIds = [...new Set(watched.map((w) => w.cause.videoId!))];
    const watchedSnapshots = watched.map(({ cause, alerts }) => {
      const { videoId, slot, snapshotTime } = cause.event.data as SnapshotRecorded['data'];
      return { videoId, slot, snapshotTime, metrics: new Set(alerts.map((a) => a.metric as AlertMetric)) };
    });
    const [videos, snapshotsOf, orgs] = await Promise.all([
      readVideos(pool, videoIds),
      readSnapshotsForAlerts(pool, watchedSnapshots),
      findOrganizations(pool, [...new Set(watched.map((w) => w.cause.orgId))]),
    ]);
    for (const { cause, alerts } of watched) {
      const video = videos.get(cause.videoId!);
      if (!video) continue;
      for (const firing of firingsOf(cause.event, alerts, video, snapshotsOf.get(video.video_id)!)) {
        const body = alertBody(firing);
        const type = `metric.alert:${firing.alert.alert_id}`;
        for (const endpoint of endpoints.filter((e) => subscribed(e, { ...cause, type: 'metric.alert' }))) {
          deliveries.push({
            deliveryId: deliveryIdOf(cause.event.id, type, endpoint.endpoint_id),
            endpointId: endpoint.endpoint_id,
            orgId: cause.orgId,
            eventId: cause.event.id,
            eventType: 'metric.alert',
            videoId: cause.videoId,
            body,
            createdAt: this.deps.clock.now(),
          });
        }
        const org = orgs.get(cause.orgId);
        if (org) messages.push(alertEmail(firing, org, this.deps.mail.from));
      }
    }
    return { deliveries, messages };
  }

  /**
   * What the read models say of the causes' videos: the whole row for the rare events that
   * describe the video, and only the platform and job id for `snapshot.created` (nearly every
   * event: a snapshot an hour per video), which needs nothing else of the row.
   */
  private async factsOf(causes: WebhookCause[]): Promise<{ facts: Map<string, VideoFacts>; snapshotVideos: Map<string, SnapshotVideo> }> {
    const described = new Set(causes.filter((c) => c.type !== 'snapshot.created' && c.videoId !== null).map((c) => c.videoId!));
    const snapshotsOnly = [...new Set(causes.filter((c) => c.type === 'snapshot.created').map((c) => c.videoId!))].filter((id) => !described.has(id));
    const facts = new Map<string, VideoFacts>();
    const snapshotVideos = await readSnapshotVideos(this.deps.pool, snapshotsOnly);
    if (described.size === 0) return { facts, snapshotVideos };
    for (const video of (await readVideos(this.deps.pool, [...described])).values()) {
      facts.set(video.video_id, { video, snapshotCount: 0, lastSnapshot: null });
      snapshotVideos.set(video.video_id, video);
    }
    // Totals only for the events that carry them (rare: once per video).
    const ending = new Set(causes.filter((c) => c.type === 'tracking.completed' || c.type === 'video.stopped').map((c) => c.videoId!));
    for (const videoId of ending) {
      const known = facts.get(videoId);
      if (!known) continue;
      const totals = await snapshotTotals(this.deps.pool, videoId);
      facts.set(videoId, { ...known, snapshotCount: totals.count, lastSnapshot: totals.last });
    }
    return { facts, snapshotVideos };
  }

  async stop(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.subscription?.unsubscribe();
    this.subscription = null;
    const deadline = performance.now() + waitMs;
    const left = () => Math.max(0, deadline - performance.now());
    await Promise.all([
      raceDeadline(this.inFlight.catch(() => undefined), waitMs),
      this.dispatcher.stop(left()),
      this.mailSender?.stop(left()),
    ]);
    this.closeMailer();
    this.mailSender = null;
  }
}

/** The organization's e-mail about its endpoint disabled after 5 days of failures; the Message-ID is a function of the disable. */
function endpointDisabledEmail(disabled: WebhookEndpointDisabled['data'], url: string | null, org: { name: string; email: string }, from: string): OutboxMessage {
  const { endpointId } = disabled;
  const at = Date.parse(disabled.at);
  return {
    messageId: `<${endpointId}.disabled.${at}@vidtrack>`,
    fileName: `${endpointId}-disabled-${at}`,
    message: {
      from,
      to: org.email,
      subject: 'A webhook endpoint was disabled after 5 days of failures',
      text: [
        `Hello ${org.name},`,
        '',
        `Every delivery to your webhook endpoint ${endpointId}${url === null ? '' : ` (${url})`} has failed for 5 days, so it has been disabled.`,
        'Fix the receiver, enable it again with PATCH /api/v1/webhooks/' + endpointId + ' {"enabled": true},',
        'and send what it missed with POST /api/v1/webhooks/' + endpointId + '/recover {"since": "..."}.',
        '',
        '-- vidtrack',
      ].join('\n'),
    },
  };
}

/** Whether an endpoint gets this event: same organization and mode, and subscribed (a test goes to its one endpoint). */
/** Whether the endpoint gets the cause: its organization's and mode's, subscribed, and created before it in the log. */
function subscribed(endpoint: LoggedWebhookEndpointRow, cause: WebhookCause): boolean {
  if (endpoint.org_id !== cause.orgId || endpoint.mode !== cause.mode) return false;
  if (comparePositions(endpoint.created, cause.event.position) >= 0) return false;
  if (cause.endpointId !== null) return endpoint.endpoint_id === cause.endpointId;
  return endpoint.events.includes(cause.type);
}
