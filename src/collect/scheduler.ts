// Bree schedules the recurring work (intervals in service time, so TIME_SCALE speeds them
// up). Each Bree job is a tiny worker that only says "due": the rounds run in the main
// thread because they share its database pool, event store and projection watcher, and
// they are I/O-bound. A job never overlaps itself, and a round drains its due work.
import Bree from 'bree';
import { fileURLToPath } from 'node:url';
import { chargeUsage, collectDue, completeEnded, resumeFunded, type WorkDeps } from './work.ts';

export type JobName = 'collect' | 'complete' | 'resume' | 'charge';

export interface SchedulerOptions {
  timeScale: number;
  onError: (job: JobName, error: unknown) => void;
  onRound?: (job: JobName, counts: Map<string, number>, perPlatform?: Map<string, number>) => void;
}

/**
 * Service-time interval of each job. Collection looks every 10 s so that a slot waits at most
 * that long for its sweep: no slot is meant to be collected more than a minute late.
 */
const INTERVALS_MS: Record<JobName, number> = { collect: 10_000, complete: 60_000, resume: 60_000, charge: 3_600_000 };
const MIN_WALL_INTERVAL_MS: Record<JobName, number> = { collect: 200, complete: 200, resume: 200, charge: 1_000 };

export class Scheduler {
  private bree: Bree | null = null;
  private running = new Map<JobName, Promise<void>>();
  private stopped = false;

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

  private async drain(job: JobName): Promise<void> {
    for (;;) {
      switch (job) {
        case 'collect': {
          // Drain: a late scheduler catches up slot after slot until nothing due is left.
          const round = await collectDue(this.deps);
          this.options.onRound?.(job, round.counts, round.perPlatform);
          if (round.claimed === 0 || round.counts.size === 0) return;
          break;
        }
        case 'complete': {
          // Let due slots have their chance first: completeEnded gives a last slot an hour of
          // grace, and at a high TIME_SCALE that hour can be shorter than the wall-clock
          // interval between two collect rounds. (run() joins a collect round already going.)
          await this.run('collect');
          const round = await completeEnded(this.deps);
          this.options.onRound?.(job, round.counts, round.perPlatform);
          if ((round.counts.get('VideoCompleted') ?? 0) < this.deps.batchSize) return;
          break;
        }
        case 'resume':
          this.options.onRound?.(job, (await resumeFunded(this.deps)).counts);
          return;
        case 'charge': {
          const { charged } = await chargeUsage(this.deps);
          this.options.onRound?.(job, new Map(charged > 0 ? [['UsageCharged', charged]] : []));
          return;
        }
      }
    }
  }

  async start(): Promise<void> {
    this.stopped = false;
    const jobs = (Object.keys(INTERVALS_MS) as JobName[]).map((name) => ({
      name,
      path: fileURLToPath(new URL(`./jobs/${name}.mjs`, import.meta.url)),
      interval: Math.max(MIN_WALL_INTERVAL_MS[name], Math.round(INTERVALS_MS[name] / this.options.timeScale)),
      worker: { workerData: { job: name } },
    }));
    this.bree = new Bree({
      root: false,
      logger: false,
      jobs,
      workerMessageHandler: ({ message }) => {
        const job = (message as { due?: JobName } | undefined)?.due;
        // A worker may still report in while Bree stops: no new round once stop() has begun.
        if (job && !this.stopped) this.run(job).catch((error) => this.options.onError(job, error));
      },
      errorHandler: (error: unknown, meta: { name?: string }) => this.options.onError((meta?.name ?? 'collect') as JobName, error),
    });
    await this.bree.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.bree?.stop();
    await Promise.allSettled(this.running.values());
  }
}
