// One store's subjects, one after another, in a process of the store's own (forked by
// ../eventstore-peer.ts): Emmett's driver layer (dumbo) sets pg's type parsers for the whole
// process (int8 as BigInt, its own jsonb parser), which must not reach vidtrack's code; and
// each store gets a fresh process, so neither inherits the other's heap or JIT state.
import { openEmmett } from './emmett.ts';
import type { Subject } from './subject.ts';
import { openVidtrack } from './vidtrack.ts';
import { runWorkloads, type Outcomes, type Sizes, type Workload } from './workloads.ts';

export type SubjectName = 'vidtrack-group-commit' | 'vidtrack-plain' | 'emmett';

export interface Job {
  subject: SubjectName;
  url: string;
  poolSize: number;
  sizes: Sizes;
  workloads: Workload[];
}

export type Reply = { ok: true; outcomes: Outcomes[] } | { ok: false; error: string };

function open(job: Job): Promise<Subject> {
  switch (job.subject) {
    case 'vidtrack-group-commit':
      return openVidtrack(job.url, { poolSize: job.poolSize, groupCommit: true });
    case 'vidtrack-plain':
      return openVidtrack(job.url, { poolSize: job.poolSize, groupCommit: false });
    case 'emmett':
      return openEmmett(job.url, { poolSize: job.poolSize });
  }
}

async function run(job: Job): Promise<Outcomes> {
  const subject = await open(job);
  try {
    return await runWorkloads(subject, job.sizes, job.workloads);
  } finally {
    await subject.close();
  }
}

process.once('message', (jobs: Job[]) => {
  (async () => {
    const outcomes: Outcomes[] = [];
    for (const job of jobs) outcomes.push(await run(job));
    return outcomes;
  })().then(
    (outcomes) => process.send!({ ok: true, outcomes } satisfies Reply, () => process.exit(0)),
    (error: unknown) => process.send!({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies Reply, () => process.exit(1)),
  );
});
