// The peer: Emmett's PostgreSQL event store (@event-driven-io/emmett-postgresql 0.42), driven
// through its exported API (getPostgreSQLEventStore, appendToStream, its consumer and projector,
// as its PostgreSQL event-store page shows; the rest read from the package's code), on a pool
// made like vidtrack's.
//
// - Appends: eventStore.appendToStream, one transaction per call (BEGIN, one call of its
//   emt_append_to_stream function, COMMIT). Emmett has no append to several streams at once,
//   so a batch is one appendToStream per stream, all issued at once on the pool.
// - Reading the log: readMessagesBatch, the exported read its consumers page with (global order:
//   transaction id, then global position, below the oldest running transaction).
// - Catch-up projection: an event-store consumer running a projector with a raw-SQL batch
//   projection, stopping when no messages are left. Its puller is given the same page size as
//   vidtrack's subscriber and no pause between full pages (its default is 100 events and 50 ms).
//   The projector applies the page in one transaction, calling the projection and storing its
//   checkpoint once per event (that is how Emmett 0.42's projector works).
// Both readers order the log by (transaction id, global position) but resume after, and skip
// as handled, a global position alone; with concurrent appenders the two orders differ, so
// some events are skipped. The figures' notes count them (workloads.ts).
import { dumbo, sql } from '@event-driven-io/dumbo';
import { STREAM_DOES_NOT_EXIST } from '@event-driven-io/emmett';
import {
  getPostgreSQLEventStore,
  postgreSQLEventStoreConsumer,
  postgreSQLRawBatchSQLProjection,
  readMessagesBatch,
  type PostgresReadEvent,
} from '@event-driven-io/emmett-postgresql';
import { createPool } from '../../../src/db/pool.ts';
import { PROJECTION_DDL, projectedEvents, projectSql } from './projection.ts';
import { BENCH_EVENT, type Subject } from './subject.ts';

export async function openEmmett(url: string, options: { poolSize: number }): Promise<Subject> {
  const pool = createPool(url, { max: options.poolSize, applicationName: 'bench-emmett' });
  const connections = dumbo({ connectionString: url, pool });
  const store = getPostgreSQLEventStore(url, { connectionOptions: { dumbo: connections } });
  try {
    await store.schema.migrate();
  } catch (error) {
    await pool.end();
    throw error;
  }
  let consumer: ReturnType<typeof postgreSQLEventStoreConsumer> | undefined;

  const appendOne = async (streamId: string) => {
    await store.appendToStream(streamId, [BENCH_EVENT], { expectedStreamVersion: STREAM_DOES_NOT_EXIST });
  };

  return {
    appendOne,
    async appendBatch(streamIds) {
      await Promise.all(streamIds.map(appendOne));
    },
    async readAll(pageSize) {
      let after = 0n;
      const read = new Set<string>();
      for (;;) {
        const { messages, currentGlobalPosition } = await readMessagesBatch(connections.execute, { after, batchSize: pageSize });
        if (messages.length === 0) return read.size;
        for (const message of messages) read.add(message.metadata.messageId);
        after = currentGlobalPosition;
      }
    },
    async project(pageSize) {
      consumer = postgreSQLEventStoreConsumer({
        connectionString: url,
        pool: connections,
        stopWhen: { noMessagesLeft: true },
        pulling: { batchSize: pageSize, pullingFrequencyInMs: 0 },
      });
      consumer.projector({
        projection: postgreSQLRawBatchSQLProjection({
          name: 'bench_stream_events',
          canHandle: [BENCH_EVENT.type],
          init: () => sql(PROJECTION_DDL),
          // Typed as bare events, handed over as read ones (with their metadata).
          evolve: (events) => [sql(projectSql('%L'), JSON.stringify((events as PostgresReadEvent[]).map((event) => event.metadata.streamName)))],
        }),
      });
      await consumer.start();
      return projectedEvents(pool);
    },
    async close() {
      try {
        await consumer?.close();
        await store.close();
      } finally {
        await pool.end();
      }
    },
  };
}
