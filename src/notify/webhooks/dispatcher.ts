// Sends recorded deliveries: claims what is due (per endpoint, in order per video and at most
// 10 at once), signs and POSTs each with no transaction open, then marks it delivered, due
// again on the retry schedule, or failed. A 410 disables the endpoint; so does every delivery
// failing for 5 days (the reactor then e-mails its organization, reading the disable from the log).
// Sends run concurrently, so one slow endpoint holds only its own 10 places. The marks of sends
// that ended go with the next claim, in its transaction: a place an endpoint frees is taken again
// in that one round trip. Once an hour of service time it also prunes the deliveries table
// (retention.ts).
import type { Pool } from 'pg';
import type { Clock } from '../../clock.ts';
import { DEFAULT_DELIVERY_RETENTION_DAYS } from '../../config.ts';
import { disableWebhookEndpoint } from '../../commands/webhook-commands.ts';
import { FAILING_ENDPOINT_DISABLE_MS, nextAttemptDelay, outcomeOf, parseRetryAfter, retryAfterOnServiceClock } from '../../domain/webhook-retry.ts';
import type { UrlPolicy } from '../../domain/webhook-url.ts';
import type { DisabledReason } from '../../domain/webhooks.ts';
import type { EventStore } from '../../eventstore/port.ts';
import { claimDue, failPendingOf, nextDue, type Claimed, type ClaimedEndpoint } from './deliveries.ts';
import { AttemptMarks, markAttempts, type AttemptMark, type MarkOutcome } from './marks.ts';
import type { SecretBox } from './secret-box.ts';
import { pruneDeliveries } from './retention.ts';
import { postWebhook, type AttemptResult } from './sender.ts';
import { webhookHeaders } from './signature.ts';
import { raceDeadline, WakeTimer } from '../timers.ts';

export interface DispatcherDeps {
  pool: Pool;
  /**
   * Claims and marks (default: `pool`): the service gives them connections of their own, apart
   * from collection's, that commit without waiting for the disk. A claim or mark a crash loses
   * means a delivery sent again with its webhook-id, which at-least-once allows.
   */
  sendPool?: Pool;
  store: EventStore;
  /** The service clock: retry schedule, rotation expiry, the 5 days. */
  clock: Clock;
  /** Wall time, for `webhook-timestamp`: receivers compare it with their own clocks. */
  wall: Clock;
  /** The service clock's speed (TIME_SCALE), to turn a wait in service time into a timer. */
  timeScale: number;
  box: SecretBox;
  policy: UrlPolicy;
  onError: (error: unknown) => void;
  /** Sends in flight in this process, all endpoints together. */
  concurrency?: number;
  random?: () => number;
  /** Collection sweeps of this process: no send starts during one, for up to `maxYieldMs` (src/collect/activity.ts). */
  collecting?: { idle(): Promise<void>; readonly busy: boolean };
  /** Default MAX_YIELD_MS. */
  maxYieldMs?: number;
  /** The attempt itself (tests may watch it); default: postWebhook. */
  post?: typeof postWebhook;
  /** Service time a delivered or failed delivery is kept (WEBHOOK_DELIVERY_RETENTION_DAYS; default 30 days). */
  retentionMs?: number;
}

/** While deliveries are pending, looks this often for one freed by a send elsewhere. */
const POLL_MS = 2_000;
/**
 * With nothing pending, looks this seldom: what this process records (the reactor) or replays
 * (its API) kicks at once, and a timer waits for the next retry; only a replay, recovery or
 * test asked of another process's API waits for this. An idle service must stay near 0 CPU.
 */
const IDLE_POLL_MS = 30_000;
const DATABASE_RETRY_MS = 2_000;
const DEFAULT_CONCURRENCY = 200;
/**
 * The share of the process's places (a twentieth: 10 of 200) kept for endpoints with nothing in
 * flight: without it, one organization's 20 endpoints at their 10 each took all 200, and another
 * organization's endpoint waited for their sends to end (up to their 15 s).
 */
const FIRST_PLACES_SHARE = 1 / 20;
/**
 * Longest wait (wall time) for a collection sweep before a claim goes ahead anyway: a scheduler
 * that is always behind runs one sweep after another, and deliveries must still move.
 */
const MAX_YIELD_MS = 5_000;
/** Service time between two prunes of the deliveries table. */
const PRUNE_EVERY_MS = 3_600_000;

export class WebhookDispatcher {
  private draining: Promise<void> | null = null;
  private again = false;
  private readonly wakeTimer = new WakeTimer(() => this.kick());
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private claiming = 0;
  private readonly sendPool: Pool;
  private readonly marks: AttemptMarks;
  private pruning: Promise<void> | null = null;
  /** Service time (ms) of the next prune: the first drain prunes. */
  private pruneAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: DispatcherDeps) {
    this.sendPool = deps.sendPool ?? deps.pool;
    this.marks = new AttemptMarks((batch) => this.writeMarks(batch));
  }

  /** Looks for due deliveries now. */
  kick(): void {
    if (this.stopped) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.wakeTimer.clear();
    this.draining = this.drain()
      .catch((error: unknown) => {
        this.deps.onError(error);
        this.wakeIn(DATABASE_RETRY_MS);
      })
      .finally(() => {
        this.draining = null;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      });
  }

  /** Resolves once nothing is in flight (tests: after a kick, wait for the round it started). */
  async idle(): Promise<void> {
    while (this.draining || this.pruning || this.inFlight.size > 0) {
      await Promise.allSettled([this.draining, this.pruning, ...this.inFlight]);
    }
  }

  /** Starts a prune when one is due, beside the sends: they do not wait for it. */
  private pruneWhenDue(): void {
    const now = this.deps.clock.now().getTime();
    if (this.stopped || this.pruning || now < this.pruneAt) return;
    this.pruneAt = now + PRUNE_EVERY_MS;
    const madeBefore = new Date(now - (this.deps.retentionMs ?? DEFAULT_DELIVERY_RETENTION_DAYS * 86_400_000));
    this.pruning = pruneDeliveries(this.deps.pool, madeBefore, () => this.stopped)
      .then(() => undefined, (error: unknown) => this.deps.onError(error))
      .finally(() => (this.pruning = null));
  }

  private async drain(): Promise<void> {
    this.pruneWhenDue();
    while (!this.stopped) {
      const room = this.free();
      if (room <= 0) return; // a finishing send kicks again
      if (this.deps.collecting) await raceDeadline(this.deps.collecting.idle(), this.deps.maxYieldMs ?? MAX_YIELD_MS);
      if (this.stopped) return;
      const { claimed } = await this.claim(room);
      // Less than there was room for: nothing more can be claimed now. What makes more claimable
      // (a send that ends, deliveries recorded) kicks, so another claim now would only find none.
      if (claimed.length < room) break;
    }
    // Kicked meanwhile: the round that follows at once looks for the next due itself.
    if (this.stopped || this.again) return;
    const now = this.deps.clock.now();
    const due = await nextDue(this.sendPool, now);
    // Due already but not claimed: it waits behind an earlier delivery of its video or for one
    // of its endpoint's 10 places, and the send that frees it kicks; the poll is the fallback.
    if (due === null) return this.wakeIn(IDLE_POLL_MS);
    const waitMs = (due.getTime() - now.getTime()) / this.deps.timeScale;
    this.wakeIn(Math.min(POLL_MS, Math.max(10, Math.ceil(waitMs))));
  }

  /** Places for sends this process has left (the drain's claim and a mark write's may overlap). */
  private free(): number {
    return (this.deps.concurrency ?? DEFAULT_CONCURRENCY) - this.inFlight.size - this.claiming;
  }

  /** Writes `marks`, claims up to `room` deliveries and starts sending them. */
  private async claim(room: number, marks: readonly AttemptMark[] = []): Promise<{ claimed: Claimed[]; marked: Map<string, MarkOutcome> }> {
    this.claiming += room;
    try {
      // `room` is what the process has free: sends to endpoints with some in flight leave the reserve of it.
      const reserved = Math.floor((this.deps.concurrency ?? DEFAULT_CONCURRENCY) * FIRST_PLACES_SHARE);
      const result = await claimDue(this.sendPool, this.deps.clock.now(), room, marks, reserved);
      // Stopped while claiming: these are not sent here (their claims lapse and another sender takes them).
      if (!this.stopped) for (const delivery of result.claimed) this.track(this.attempt(delivery));
      return result;
    } finally {
      this.claiming -= room;
    }
  }

  private track(work: Promise<boolean>): void {
    const tracked = work
      .catch((error: unknown) => {
        this.deps.onError(error);
        return false;
      })
      .then((claimedAfter) => {
        this.inFlight.delete(tracked);
        if (!claimedAfter) this.kick();
      });
    this.inFlight.add(tracked);
  }

  /**
   * Writes marks, and claims in the same transaction as much as there is room for, unless a
   * sweep runs (the drain waits for it) or the dispatcher stopped. After a write that claimed
   * less than its room, nothing more could be claimed: a delivered attempt needs no round of the
   * drain (one due again later does, for the timer of its retry).
   */
  private async writeMarks(batch: readonly AttemptMark[]): Promise<Map<string, MarkOutcome>> {
    // The attempts of `batch` are still in flight, and end with this write.
    const room = this.free() + batch.length;
    if (this.stopped || this.deps.collecting?.busy || room <= 0) return markAttempts(this.sendPool, batch);
    const { claimed, marked } = await this.claim(room, batch);
    const claimedAfter = claimed.length < room;
    return new Map([...marked].map(([id, outcome]) => [id, { ...outcome, claimedAfter }]));
  }

  /** One attempt, marked; answers whether its mark's write claimed all there was room for (see writeMarks). */
  private async attempt(delivery: Claimed): Promise<boolean> {
    const { clock, wall } = this.deps;
    const endpoint = delivery.endpoint;
    if (!endpoint || !endpoint.enabled) {
      const { claimedAfter } = await this.marks.mark(delivery, { status: 'failed', httpStatus: null, error: endpoint ? 'endpoint disabled' : 'endpoint deleted', nextAttemptAt: null, at: clock.now(), receiverCalled: false });
      return claimedAfter === true;
    }
    const secrets = this.secretsOf(endpoint);
    const attemptedAt = clock.now();
    const timestamp = Math.floor(wall.now().getTime() / 1000);
    const headers = webhookHeaders(secrets, delivery.delivery_id, timestamp, delivery.body);
    const result: AttemptResult = await (this.deps.post ?? postWebhook)(endpoint.url, headers, delivery.body, this.deps.policy);
    const outcome = outcomeOf(result.status, retryAfterOnServiceClock(parseRetryAfter(result.retryAfter, wall.now().getTime()), this.deps.timeScale));
    const now = clock.now();
    const delay = nextAttemptDelay(delivery.attempts, outcome, (this.deps.random ?? Math.random)());
    const status = outcome.kind === 'delivered' ? 'delivered' : delay === null ? 'failed' : 'pending';
    const error = outcome.kind === 'delivered' ? null : (result.error ?? `HTTP ${result.status}`);
    const { marked, failingSince, claimedAfter } = await this.marks.mark(delivery, { status, httpStatus: result.status, error, nextAttemptAt: status === 'pending' ? new Date(now.getTime() + delay!) : null, at: now, receiverCalled: true });
    if (!marked) return false; // the claim lapsed and another sender took it over: its answer counts
    if (outcome.kind === 'gone') await this.disable(endpoint, 'gone', attemptedAt);
    else if (failingSince && now.getTime() - failingSince.getTime() >= FAILING_ENDPOINT_DISABLE_MS) await this.disable(endpoint, 'failing', attemptedAt);
    return claimedAfter === true && outcome.kind === 'delivered';
  }

  /** The current secret, and the rotated-out one while it is still valid (two signatures). */
  private secretsOf(endpoint: ClaimedEndpoint): string[] {
    const secrets = [this.deps.box.open(endpoint.sealed_secret)];
    if (endpoint.previous_sealed_secret && endpoint.previous_expires_at && endpoint.previous_expires_at.getTime() > this.deps.clock.now().getTime()) {
      secrets.push(this.deps.box.open(endpoint.previous_sealed_secret));
    }
    return secrets;
  }

  /**
   * Appends the disable, then fails what was pending. The organization's e-mail (for a disable
   * after 5 days of failures) follows from the log: the reactor records it when it reads the
   * disable (reactor.ts), so a failure here after the append does not lose it.
   */
  private async disable(endpoint: ClaimedEndpoint, reason: DisabledReason, attemptedAt: Date): Promise<void> {
    const { pool, store, clock } = this.deps;
    await disableWebhookEndpoint(store, clock, endpoint.org_id, endpoint.endpoint_id, reason, attemptedAt);
    await failPendingOf(pool, endpoint.endpoint_id, reason === 'gone' ? 'endpoint answered 410 Gone and was disabled' : 'endpoint failed for 5 days and was disabled');
  }

  private wakeIn(ms: number): void {
    if (!this.stopped) this.wakeTimer.in(ms);
  }

  /** No new send starts; resolves once those under way ended, or after `waitMs` (their claims then lapse and are retaken). */
  async stop(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    this.wakeTimer.clear();
    // A round that was claiming may still add sends: wait until nothing is left, not for a snapshot.
    const settled = (async () => {
      while (this.draining || this.pruning || this.inFlight.size > 0) await Promise.allSettled([this.draining, this.pruning, ...this.inFlight]);
    })();
    await raceDeadline(settled, waitMs);
  }
}
