// The PostgreSQL log read where it lies, for a rebuild in the read models' own database
// (EventStore.logInDatabase): a FROM item for set-based replays, and typed pages for the rest.
import type { LogInDatabase, Position, RecordedEvent, SqlClient } from './port.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './postgres-rows.ts';

/** Events up to `upTo` in the readers' order: (transaction_id, position), inclusive. */
function upToCondition(upTo: Position): string {
  // Bigints we hold, printed as digits: nothing from outside reaches the SQL text.
  return `(transaction_id, position) <= ('${upTo.commit.toString()}'::xid8, ${upTo.prepare.toString()}::bigint)`;
}

export const postgresLog: LogInDatabase = {
  eventsUpTo: (upTo) => `(SELECT position, stream_id, revision, type, data FROM es.events WHERE ${upToCondition(upTo)}) AS log`,

  async countUpTo(db, upTo) {
    const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM es.events WHERE ${upToCondition(upTo)}`);
    return Number(rows[0]!.n);
  },

  async *readTypesUpTo(client: SqlClient, types, upTo, pageSize): AsyncIterable<RecordedEvent[]> {
    const cursor = `replay_${Math.random().toString(36).slice(2)}`;
    await client.query(
      `DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${EVENT_COLUMNS} FROM es.events
       WHERE type = ANY($1::text[]) AND ${upToCondition(upTo)} ORDER BY es.events.transaction_id, es.events.position`,
      [types],
    );
    try {
      for (;;) {
        const { rows } = await client.query<EventRow>(`FETCH ${pageSize} FROM ${cursor}`);
        if (rows.length === 0) return;
        yield rows.map(toRecordedEvent);
      }
    } finally {
      // After a failure the transaction's end closes it (and CLOSE itself would fail).
      await client.query(`CLOSE ${cursor}`).catch(() => undefined);
    }
  },
};
