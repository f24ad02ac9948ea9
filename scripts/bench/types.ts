import type { BenchServer } from './env.ts';

export interface BenchContext {
  /** Tiny sizes, so that `npm test` can run every benchmark in seconds. */
  smoke: boolean;
  server: BenchServer;
  log(message: string): void;
}

/** One row of the results table: a figure, the limit it is compared with, and the target. */
export interface Figure {
  figure: string;
  value: number;
  unit: string;
  /** The limit measured in the same run, in the same unit (null when the target is absolute). */
  limit: number | null;
  limitLabel: string;
  target: string;
  /** Whether the target holds (null when the run was too small to say, e.g. --smoke). */
  met: boolean | null;
  notes?: string;
}

export interface Benchmark {
  name: string;
  run(context: BenchContext): Promise<Figure[]>;
}
