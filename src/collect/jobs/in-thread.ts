// What Bree runs in place of a worker thread for the scheduler's jobs. Bree keeps the
// cadence (its intervals, one run of a job at a time, stop); the run itself only tells the
// scheduler in the main thread that the job is due, so it needs no thread: starting a Worker
// per tick cost 2% of a core at wall speed and most of two cores at TIME_SCALE=3600.
// Bree's documented hook for how a job runs is `createWorker`; this is the part of a Worker
// Bree uses (events online/message/exit, postMessage('cancel'), terminate).
import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';

class InThreadJob extends EventEmitter {
  readonly threadId = -1;
  readonly isMainThread = true;
  readonly resourceLimits = {};
  private ended = false;

  constructor() {
    super();
    // Bree attaches its listeners after createWorker returns.
    setImmediate(() => {
      if (this.ended) return;
      this.emit('online');
      // 'done' makes Bree end the run at once and let the next interval start the next one.
      this.emit('message', 'done');
    });
  }

  postMessage(message: unknown): void {
    // bree.stop() asks a running job to cancel and waits until Bree has forgotten it.
    if (message === 'cancel' && !this.ended) {
      this.ended = true;
      this.emit('exit', 0);
    }
  }

  terminate(): Promise<number> {
    this.ended = true;
    return Promise.resolve(0);
  }
}

export function createInThreadJob(): Worker {
  return new InThreadJob() as unknown as Worker;
}
