// vidtrack's PostgreSQL event store as a benchmark subject: plain (one transaction per append)
// or behind the group commit the API uses (src/eventstore/batching.ts).
import { migrate } from '../../../src/db/migrate.ts';
import { createPool, withTransaction } from '../../../src/db/pool.ts';
import { BatchingEventStore } from '../../../src/eventstore/batching.ts';
import { appendError, formatPosition, type EventStore, type Position, type RecordedEvent } from '../../../src/eventstore/port.ts';
import { PostgresEventStore } from '../../../src/eventstore/postgres.ts';
import { eventStoreMigrations } from '../../../src/eventstore/postgres-schema.ts';
import { PROJECTION_DDL, projectedEvents, projectSql } from './projection.ts';
import { BENCH_EVENT, type Subject } from './subject.ts';

export async function openVidtrack(url: string, options: { poolSize: number; groupCommit: boolean }): Promise<Subject> {
  const pool = createPool(url, { max: options.poolSize, applicationName: 'bench-vidtrack' });
  let store: EventStore | undefined;
  try {
    await migrate(pool, eventStoreMigrations);
    const plain = new PostgresEventStore(pool);
    store = options.groupCommit ? new BatchingEventStore(plain) : plain;
  } catch (error) {
    await pool.end();
    throw error;
  }
  const events = store;

  /** Applies a page and moves the checkpoint in one transaction, as the service's projector does. */
  const apply = (page: RecordedEvent[]) =>
    withTransaction(pool, async (client) => {
      await client.query(projectSql('$1'), [JSON.stringify(page.map((event) => event.streamId))]);
      await client.query('update bench_checkpoint set position = $1', [formatPosition(page[page.length - 1]!.position)]);
    });

  return {
    async appendOne(streamId) {
      await events.append(streamId, [BENCH_EVENT], 'no_stream');
    },
    async appendBatch(streamIds) {
      const outcomes = await events.appendMany(streamIds.map((streamId) => ({ streamId, events: [BENCH_EVENT], expectedRevision: 'no_stream' as const })));
      const failed = outcomes.find((outcome) => !outcome.ok);
      if (failed && !failed.ok) throw appendError(failed);
    },
    async readAll(pageSize) {
      let after: Position | null = null;
      const read = new Set<string>();
      for (;;) {
        const page = await events.readAll(after, pageSize);
        if (page.length === 0) return read.size;
        for (const event of page) read.add(event.id);
        after = page[page.length - 1]!.position;
      }
    },
    async project(pageSize, total) {
      await pool.query(`${PROJECTION_DDL}; create table bench_checkpoint (position text); insert into bench_checkpoint values (null)`);
      await new Promise<void>((resolve, reject) => {
        let applied = 0;
        let done = false;
        let applying = Promise.resolve();
        // `ready` holds the reader back until the last page is applied (backpressure).
        const subscription = events.subscribeAll(null, { batchSize: pageSize, ready: () => applying }).subscribe({
          next(page) {
            applying = applying.then(() => apply(page));
            applying.then(
              () => {
                applied += page.length;
                if (applied >= total) finish();
              },
              finish,
            );
          },
          error: finish,
        });
        function finish(error?: unknown) {
          if (done) return;
          done = true;
          subscription.unsubscribe();
          if (error === undefined) resolve();
          else reject(error);
        }
      });
      return projectedEvents(pool);
    },
    async close() {
      try {
        await events.close();
      } finally {
        await pool.end();
      }
    },
  };
}
