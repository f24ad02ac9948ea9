// A Bree job: it tells the scheduler in the main thread that this job is due. The work
// itself runs there, on the process's shared database pool and event store connection.
import { parentPort, workerData } from 'node:worker_threads';

parentPort?.postMessage({ due: workerData?.job });
