// The PostgreSQL log read where it lies, for a rebuild in the read models' own database
// (EventStore.logInDatabase): a FROM item for set-based replays, and typed pages for the rest.
import type { LogInDatabase, Position, RecordedEvent, SqlClient } from './port.ts';
import { exemptFromHorizon } from './horizon.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './postgres-rows.ts';

/** Events up to `upTo` in the readers' order: (transaction_id, position), inclusive. */
function upToCondition(upTo: Position): string {
  // Bigints we hold, printed as digits: nothing from outside reaches the SQL text.
  return `(transaction_id, position) <= ('${upTo.commit.toString()}'::xid8, ${upTo.prepare.toString()}::bigint)`;
}

/**
 * The reads of the log over `table`: es.events, or a copy of part of it (copyExcept). `pool`
 * registers exemptions from the horizon, in autocommit.
 */
function logIn(table: string, pool: SqlClient): LogInDatabase {
  const from = (conditions: string[]) => `(SELECT position, stream_id, revision, type, data FROM ${table} WHERE ${conditions.join(' AND ')}) AS log`;
  return {
    eventsUpTo: (upTo) => from([upToCondition(upTo)]),

    async partsUpTo(db, upTo, parts) {
      // By where the rows lie: each part then reads only its own pages (a TID range scan),
      // where parts by position would each read every page of the log. The last part has no
      // end, so that it holds what lies beyond the pages counted here.
      const { rows } = await db.query<{ pages: string }>(`SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int AS pages`, [table]);
      const pages = Number(rows[0]!.pages);
      const page = (part: number) => `'(${Math.floor((pages * part) / parts)},0)'::tid`;
      return Array.from({ length: parts }, (_, part) =>
        from([upToCondition(upTo), ...(part > 0 ? [`ctid >= ${page(part)}`] : []), ...(part < parts - 1 ? [`ctid < ${page(part + 1)}`] : [])]),
      );
    },

    async countUpTo(db, upTo) {
      const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE ${upToCondition(upTo)}`);
      return Number(rows[0]!.n);
    },

    async *readTypesUpTo(client: SqlClient, types, upTo, pageSize): AsyncIterable<RecordedEvent[]> {
      const cursor = `replay_${Math.random().toString(36).slice(2)}`;
      await client.query(
        `DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT ${EVENT_COLUMNS} FROM ${table} AS events
         WHERE type = ANY($1::text[]) AND ${upToCondition(upTo)} ORDER BY events.transaction_id, events.position`,
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

    async copyExcept(client, into, types, upTo) {
      // A utility statement takes no parameters: the types are written in, as the names they must be.
      if (!types.every((type) => /^[A-Za-z]+$/.test(type))) throw new Error(`not event types: ${types.join(', ')}`);
      const { rowCount } = await client.query(
        `CREATE UNLOGGED TABLE ${into} WITH (autovacuum_enabled = false) AS SELECT * FROM ${table}
         WHERE type NOT IN (${types.map((type) => `'${type}'`).join(', ')}) AND ${upToCondition(upTo)}`,
      );
      return { log: logIn(into, pool), events: rowCount ?? 0 };
    },

    exemptFromHorizon: (client) => exemptFromHorizon(client, pool),
  };
}

/** The log in the database of `pool`, which holds it. */
export function postgresLog(pool: SqlClient): LogInDatabase {
  return logIn('es.events', pool);
}
