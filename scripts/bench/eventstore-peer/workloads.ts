// The four workloads of the event-store comparison, the same code for every subject, on an
// empty database. Read and projection rates are of the whole log (the events written before
// them); how many distinct events each actually delivered is reported beside the rate, so a
// store that skips events shows it instead of looking fast.
import type { Subject } from './subject.ts';

export interface Sizes {
  /** (a) concurrent writers, each appending one event to a new stream, `perWriter` times. */
  writers: number;
  perWriter: number;
  /** (b) batches, each of `batchSize` events to as many new streams. */
  batches: number;
  batchSize: number;
  /** (c) and (d): events per page read. */
  pageSize: number;
}

export type Workload = 'singles' | 'batches' | 'read' | 'project';

export interface Outcome {
  /** Events per second: of the events appended, or of the log read or projected. */
  rate: number;
  /** Distinct events appended, read or projected... */
  events: number;
  /** ...of these. */
  expected: number;
}

export type Outcomes = Partial<Record<Workload, Outcome>>;

/** Runs the workloads in order (read and project see what the appends before them wrote). */
export async function runWorkloads(subject: Subject, sizes: Sizes, workloads: readonly Workload[]): Promise<Outcomes> {
  const outcomes: Outcomes = {};
  let written = 0;
  for (const workload of workloads) {
    const expected = workload === 'read' || workload === 'project' ? written : 0;
    const t0 = performance.now();
    const events = await run(workload);
    const seconds = (performance.now() - t0) / 1000;
    outcomes[workload] = { rate: (expected || events) / seconds, events, expected: expected || events };
  }
  return outcomes;

  async function run(workload: Workload): Promise<number> {
    switch (workload) {
      case 'singles': {
        const writer = async (w: number) => {
          for (let i = 0; i < sizes.perWriter; i++) await subject.appendOne(`video-w${w}-${i}`);
        };
        await Promise.all(Array.from({ length: sizes.writers }, (_, w) => writer(w)));
        written += sizes.writers * sizes.perWriter;
        return sizes.writers * sizes.perWriter;
      }
      case 'batches':
        for (let b = 0; b < sizes.batches; b++) {
          await subject.appendBatch(Array.from({ length: sizes.batchSize }, (_, i) => `video-b${b}-${i}`));
        }
        written += sizes.batches * sizes.batchSize;
        return sizes.batches * sizes.batchSize;
      case 'read':
        return subject.readAll(sizes.pageSize);
      case 'project':
        return subject.project(sizes.pageSize, written);
    }
  }
}
