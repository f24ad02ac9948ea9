// The file Bree knows every scheduler job by (it checks that a job's file exists). The
// scheduler's Bree starts no thread for a job (see ./in-thread.ts); were it run in a thread,
// all it would do is what the in-thread run does: report that its job is due.
import { parentPort } from 'node:worker_threads';

parentPort?.postMessage('done');
