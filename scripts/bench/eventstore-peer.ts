// vidtrack's PostgreSQL event store against a peer, Emmett's PostgreSQL event store (issue 12):
// the same appends, read and catch-up projection (eventstore-peer/workloads.ts) on the same
// server in the same run, each subject on a database of its own, each store in a process of its
// own (eventstore-peer/child.ts says why).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createDatabase, dropDatabase } from './env.ts';
import type { Job, Reply, SubjectName } from './eventstore-peer/child.ts';
import type { Outcome, Outcomes, Sizes, Workload } from './eventstore-peer/workloads.ts';
import type { BenchContext, Benchmark, Figure } from './types.ts';

const CHILD = fileURLToPath(new URL('./eventstore-peer/child.ts', import.meta.url));
const SIZES: Sizes = { writers: 64, perWriter: 250, batches: 20, batchSize: 1_000, pageSize: 1_000 };
const SMOKE_SIZES: Sizes = { writers: 8, perWriter: 2, batches: 1, batchSize: 50, pageSize: 20 };
const ALL: Workload[] = ['singles', 'batches', 'read', 'project'];
const PEER = 'Emmett 0.42';

export const eventStorePeerBenchmark: Benchmark = {
  name: 'eventstore-peer',
  async run(context) {
    const sizes = context.smoke ? SMOKE_SIZES : SIZES;
    const [ours, plain] = (await measure(context, sizes, [
      { subject: 'vidtrack-group-commit', workloads: ALL },
      { subject: 'vidtrack-plain', workloads: ['singles'] },
    ])) as [Outcomes, Outcomes];
    const [peer] = (await measure(context, sizes, [{ subject: 'emmett', workloads: ALL }])) as [Outcomes];

    const count = (n: number) => n.toLocaleString('en-US');
    const singles = count(sizes.writers * sizes.perWriter);
    const log = count(sizes.writers * sizes.perWriter + sizes.batches * sizes.batchSize);
    const figure = (name: string, workload: Workload, peerLabel: string, times: number | null, value = ours[workload]!): Figure => ({
      figure: `event store: ${name}`,
      value: value.rate,
      unit: 'events/s',
      limit: peer[workload]!.rate,
      limitLabel: `${PEER}, ${peerLabel}`,
      target: times === null ? '- (the service appends through the group commit)' : `>= ${times}x ${PEER}`,
      met: context.smoke || times === null ? null : value.rate >= times * peer[workload]!.rate,
      notes: [shortfall('vidtrack', value), shortfall(PEER, peer[workload]!)].filter(Boolean).join('; '),
    });
    return [
      figure(`${sizes.writers} writers, 1 event each to a new stream, group commit (${singles} events)`, 'singles', 'appendToStream', 5),
      figure(`${sizes.writers} writers, 1 event each to a new stream, one transaction per append (${singles} events)`, 'singles', 'appendToStream', null, plain.singles),
      figure(`batches of ${count(sizes.batchSize)} events to as many new streams, appendMany (${count(sizes.batches * sizes.batchSize)} events)`, 'batches', `${count(sizes.batchSize)} appendToStream at once`, 5),
      figure(`the whole log read in order, pages of ${count(sizes.pageSize)} (${log} events)`, 'read', 'readMessagesBatch', 1),
      figure(`catch-up subscriber projecting one table (${log} events)`, 'project', 'consumer + projector', 1),
    ];
  },
};

/** Says when a store delivered fewer (or more) distinct events than the log holds. */
function shortfall(who: string, outcome: Outcome): string {
  return outcome.events === outcome.expected ? '' : `${who} delivered ${outcome.events.toLocaleString('en-US')} of ${outcome.expected.toLocaleString('en-US')} events`;
}

/**
 * Runs the subjects of one store in one child process, each on a fresh database of its own, with
 * a pool of a connection per writer of (a), so that no store waits for a connection.
 */
async function measure(context: BenchContext, sizes: Sizes, runs: { subject: SubjectName; workloads: Workload[] }[]): Promise<Outcomes[]> {
  const databases: string[] = [];
  try {
    const jobs: Job[] = [];
    for (const { subject, workloads } of runs) {
      const database = `bench_es_${subject.replaceAll('-', '_')}`;
      databases.push(database);
      jobs.push({ subject, url: await createDatabase(context.server, database), poolSize: sizes.writers, sizes, workloads });
    }
    const outcomes = await runChild(jobs);
    outcomes.forEach((outcome, i) => {
      const { subject, workloads } = runs[i]!;
      context.log(`${subject}: ${workloads.map((w) => `${w} ${Math.round(outcome[w]!.rate).toLocaleString('en-US')} events/s`).join(', ')}`);
    });
    return outcomes;
  } finally {
    for (const database of databases) await dropDatabase(context.server, database);
  }
}

function runChild(jobs: Job[]): Promise<Outcomes[]> {
  const child = fork(CHILD, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const done = new Promise<Outcomes[]>((resolve, reject) => {
    let reply: Reply | undefined;
    child.once('message', (message) => (reply = message as Reply));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (reply?.ok) resolve(reply.outcomes);
      else reject(new Error(`${jobs.map((job) => job.subject).join(', ')}: ${reply && !reply.ok ? reply.error : `exited with ${code ?? signal}`}`));
    });
  });
  child.send(jobs);
  // Only a failure to start or to talk to it ends the wait with the child still running.
  return done.finally(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
}
