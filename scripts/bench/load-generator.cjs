// The HTTP benchmarks' client: a worker thread that runs autocannon on its own event loop, one
// run per message, and stays up between runs. (CommonJS and without tsx, so that it starts
// without the bench process's TypeScript loader.)
//
// It replaced autocannon's own `workers` option, which starts a new thread for every run, so
// that each slice of 2 s began with a client just started, its code not yet compiled: track
// measured that way ran about 7% slower, in alternated runs (BENCHMARKS.md).
'use strict';
const { parentPort } = require('node:worker_threads');
const autocannon = require('autocannon');

parentPort.on('message', ({ id, options, setupRequest }) => {
  const run = { ...options, ...(setupRequest ? { requests: [{ setupRequest: require(setupRequest) }] } : {}) };
  autocannon(run, (error, raw) => {
    if (error) return parentPort.postMessage({ id, error: String(error.stack ?? error) });
    // Off the main thread autocannon leaves its histograms encoded, for the thread that
    // started it to aggregate; this thread is that one here.
    const { duration, errors, timeouts, statusCodeStats, latency } = autocannon.aggregateResult([raw], run);
    parentPort.postMessage({ id, result: { duration, errors, timeouts, statusCodeStats, latency } });
  });
});
