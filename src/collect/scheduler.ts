// Bree schedules the recurring work (intervals in service time, so TIME_SCALE speeds them
// up). A Bree run only says "due" (./jobs/in-thread.ts: no thread): the rounds run in the
// main thread because they share its database pool, event store and projection watcher, and
// they are I/O-bound. A job never overlaps itself, and a round drains its due work.
//
// Idle costs nothing: a round that found no work is not run again until the read models
// change (the watcher's position moves) or the service time reaches the next slot or end of
// period (a timer wakes it then), or a minute of wall time has passed (leases held by another
// scheduler lapse, a platform's retry time passes: things the read models do not show).
//
// A round that fails is reported and tried again with backoff (1 s, doubling up to 30 s of
// wall time), not at the next tick: ticks of a job in backoff are skipped, so a database
// outage at TIME_SCALE=3600 is not five failed rounds and log lines a second per job.
import Bree from 'bree';
import { fileURLToPath } from 'node:url';
import { comparePositions, type Position } from '../eventstore/port.ts';
import { createInThreadJob } from './jobs/in-thread.ts';
import { nextWork } from './next-work.ts';
import { chargeUsage, collectDue, completeEnded, resumeFunded, type WorkDeps } from './work.ts';

export type JobName = 'collect' | 'complete' | 'resume' | 'charge';

export interface SchedulerOptions {
  timeScale: number;
  /** A round failed; it runs again in `retryInMs` of wall time (null: the scheduler is stopping). */
  onError: (job: JobName, error: unknown, retryInMs: number | null) => void;
  onRound?: (job: JobName, counts: Map<string, number>, perPlatform?: Map<string, number>) => void;
}

/**
 * Service-time interval of each job. An idle job is also woken at the time its next work falls
 * due (wakeAt), so the interval bounds how long a change in the read models (a new video)
 * waits for its round: no slot is meant to be collected more than a minute late.
 */
const INTERVALS_MS: Record<JobName, number> = { collect: 10_000, complete: 60_000, resume: 60_000, charge: 3_600_000 };
const MIN_WALL_INTERVAL_MS: Record<JobName, number> = { collect: 200, complete: 200, resume: 200, charge: 1_000 };
const IDLE_RECHECK_WALL_MS = 60_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
const JOB_FILE = fileURLToPath(new URL('./jobs/due.mjs', import.meta.url));

/** A job that found nothing to do, and what would have to change for it to find some. */
interface Idle {
  position: Position | null;
  /** Service time (ms) at which time alone can bring work. */
  untilService: number;
  untilWall: number;
}

export class Scheduler {
  private bree: Bree | null = null;
  private running = new Map<JobName, Promise<void>>();
  private idle = new Map<JobName, Idle>();
  private failures = new Map<JobName, number>();
  private retries = new Map<JobName, NodeJS.Timeout>();
  private wakes = new Map<JobName, NodeJS.Timeout>();
  private stopped = false;
  /** Aborted by stop(): tells a sweep under way to fetch no further batch. */
  private stopping = new AbortController();

  constructor(
    private readonly deps: WorkDeps,
    private readonly options: SchedulerOptions,
  ) {}

  /** One round of a job, to completion (also what tests and benchmarks call). */
  async run(job: JobName): Promise<void> {
    const current = this.running.get(job);
    if (current) return current;
    const round = this.drain(job).finally(() => this.running.delete(job));
    this.running.set(job, round);
    return round;
  }

  /**
   * What a tick of Bree does: a round, unless the job is idle, waits to retry, or has a round
   * under way (joining it would report its failure once more per tick, each doubling the backoff).
   */
  private tick(job: JobName): void {
    if (this.stopped || this.running.has(job) || this.retries.has(job) || this.isIdle(job)) return;
    this.attempt(job);
  }

  private attempt(job: JobName): void {
    this.run(job).then(
      () => this.failures.delete(job),
      (error: unknown) => this.failed(job, error),
    );
  }

  private failed(job: JobName, error: unknown): void {
    this.idle.delete(job);
    if (this.stopped) return; // a round cut short by stop(): its work is picked up at the next start
    const failures = (this.failures.get(job) ?? 0) + 1;
    this.failures.set(job, failures);
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
    this.options.onError(job, error, delay);
    clearTimeout(this.retries.get(job));
    this.retries.set(
      job,
      setTimeout(() => {
        this.retries.delete(job);
        if (!this.stopped) this.attempt(job);
      }, delay),
    );
  }

  private isIdle(job: JobName): boolean {
    const idle = this.idle.get(job);
    if (!idle) return false;
    const position = this.deps.watcher.position;
    const unchanged = idle.position === null ? position === null : position !== null && comparePositions(position, idle.position) === 0;
    if (unchanged && this.deps.clock.now().getTime() < idle.untilService && performance.now() < idle.untilWall) return true;
    this.idle.delete(job);
    return false;
  }

  private async markIdle(job: JobName, position: Position | null, timeBound: 'slot' | 'end' | null): Promise<void> {
    let untilService = Number.POSITIVE_INFINITY;
    if (timeBound) {
      const next = await nextWork(this.deps.pool);
      const at = timeBound === 'slot' ? next.slotAt : next.endAt;
      if (at) untilService = at.getTime();
    }
    this.idle.set(job, { position, untilService, untilWall: performance.now() + IDLE_RECHECK_WALL_MS });
    if (Number.isFinite(untilService)) this.wakeAt(job, untilService);
  }

  /**
   * A tick at the service time when work falls due, rather than at Bree's next interval after
   * it: a slot due 1 ms after a tick would otherwise wait the whole 10 s. Work shown as due
   * already arms nothing: the round just found none, so the read models lag behind what was
   * collected, and the ticks look again (a timer would spin until the projection catches up).
   * The +1 ms makes the clock read at or past the due time when the timer fires.
   */
  private wakeAt(job: JobName, serviceMs: number): void {
    this.clearWake(job);
    const aheadMs = serviceMs - this.deps.clock.now().getTime();
    const wallMs = Math.ceil(aheadMs / this.options.timeScale) + 1;
    if (this.stopped || aheadMs <= 0 || wallMs > IDLE_RECHECK_WALL_MS) return;
    this.wakes.set(
      job,
      setTimeout(() => {
        this.wakes.delete(job);
        this.tick(job);
      }, wallMs),
    );
  }

  private clearWake(job: JobName): void {
    clearTimeout(this.wakes.get(job));
    this.wakes.delete(job);
  }

  private async drain(job: JobName): Promise<void> {
    this.idle.delete(job);
    this.clearWake(job);
    // What the read models showed when this round began: a change after it wakes the job.
    const position = this.deps.watcher.position;
    // A draining round ends at the next batch once stop() is called.
    while (!this.stopped) {
      switch (job) {
        case 'collect': {
          // Drain: a late scheduler catches up slot after slot until nothing due is left.
          const round = await collectDue(this.deps, this.stopping.signal);
          this.options.onRound?.(job, round.counts, round.perPlatform);
          if (round.claimed === 0) return this.markIdle(job, position, 'slot');
          if (round.counts.size === 0) return;
          break;
        }
        case 'complete': {
          // Let due slots have their chance first: completeEnded gives a last slot an hour of
          // grace, and at a high TIME_SCALE that hour can be shorter than the wall-clock
          // interval between two collect rounds. (run() joins a collect round already going.)
          await this.run('collect');
          const round = await completeEnded(this.deps);
          this.options.onRound?.(job, round.counts, round.perPlatform);
          const completed = round.counts.get('VideoCompleted') ?? 0;
          if (round.counts.size === 0) return this.markIdle(job, position, 'end');
          if (completed < this.deps.batchSize) return;
          break;
        }
        case 'resume': {
          const round = await resumeFunded(this.deps);
          this.options.onRound?.(job, round.counts);
          // Only a change in the log (a deposit) lets a paused video resume.
          if (round.counts.size === 0) return this.markIdle(job, position, null);
          return;
        }
        case 'charge': {
          const { charged } = await chargeUsage(this.deps);
          this.options.onRound?.(job, new Map(charged > 0 ? [['UsageCharged', charged]] : []));
          if (charged === 0) return this.markIdle(job, position, null);
          return;
        }
      }
    }
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.stopping = new AbortController();
    const jobs = (Object.keys(INTERVALS_MS) as JobName[]).map((name) => ({
      name,
      path: JOB_FILE,
      // A round of every job at once on start (catching up after a restart), then each interval.
      timeout: 0,
      interval: Math.max(MIN_WALL_INTERVAL_MS[name], Math.round(INTERVALS_MS[name] / this.options.timeScale)),
    }));
    this.bree = new Bree({
      root: false,
      logger: false,
      jobs,
      workerMessageHandler: ({ name, message }) => {
        if (message === 'done') this.tick(name as JobName);
      },
      errorHandler: (error: unknown, meta: { name?: string }) => this.options.onError((meta?.name ?? 'collect') as JobName, error, null),
    });
    this.bree.createWorker = createInThreadJob;
    await this.bree.start();
  }

  /**
   * No round starts after this is called; resolves once the rounds under way have ended, or
   * after `waitMs` (a round stuck on a slow database is left to fail when the pool closes).
   */
  async stop(waitMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    for (const timer of [...this.retries.values(), ...this.wakes.values()]) clearTimeout(timer);
    this.retries.clear();
    this.wakes.clear();
    await this.bree?.stop();
    const rounds = Promise.allSettled(this.running.values());
    if (!Number.isFinite(waitMs)) return void (await rounds);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([rounds, new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }
}
