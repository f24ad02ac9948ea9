// Schema of the PostgreSQL event store (see postgres.ts for why it looks like this).
import type { Migration } from '../db/migrate.ts';

/** Channel that appending transactions NOTIFY; subscriptions LISTEN on it. */
export const EVENTS_CHANNEL = 'es_events';

export const eventStoreMigrations: readonly Migration[] = [
  {
    id: 'eventstore/001-events',
    sql: `
      create schema if not exists es;

      create table es.events (
        position bigint generated always as identity primary key,
        -- The appending transaction: readers order by (transaction_id, position)
        -- and stop below the oldest transaction still running.
        transaction_id xid8 not null default pg_current_xact_id(),
        stream_id text not null,
        revision bigint not null,
        event_id uuid not null default gen_random_uuid() unique,
        type text not null,
        data jsonb not null,
        metadata jsonb not null default '{}',
        recorded_at timestamptz not null default now(),
        unique (stream_id, revision)
      );
      create index events_global_order on es.events (transaction_id, position);

      -- One row per stream holding its last revision. Appends lock this row, so
      -- concurrent appends to a stream queue up and an expected-revision check
      -- is decided without an error (a failed statement would sink the batch).
      create table es.streams (
        stream_id text primary key,
        revision bigint not null
      ) with (fillfactor = 80); -- room for HOT updates of revision

      -- One notification per appending transaction: PostgreSQL folds identical
      -- notifications of a transaction into one.
      create function es.notify_events() returns trigger language plpgsql as $$
      begin
        perform pg_notify('${EVENTS_CHANNEL}', '');
        return null;
      end $$;
      create trigger events_notify after insert on es.events
        for each statement execute function es.notify_events();
    `,
  },
  {
    // Every index on es.events is paid for by every append. Readers walk the log by
    // (transaction_id, position) and streams by (stream_id, revision); nothing looks an
    // event up by its id or by position alone, so those two indexes only cost.
    id: 'eventstore/002-lean-indexes',
    sql: `
      alter table es.events drop constraint events_event_id_key;
      alter table es.events drop constraint events_pkey;
      alter table es.events set (fillfactor = 100);
    `,
  },
  {
    // The append decides races on the (stream_id, revision) index alone (see APPEND_SQL).
    id: 'eventstore/003-no-stream-rows',
    sql: `drop table es.streams;`,
  },
  {
    // The store NOTIFYs after an append commits, not inside it: PostgreSQL serializes NOTIFYing
    // commits through each one's WAL flush (src/eventstore/announcer.ts).
    id: 'eventstore/004-notify-after-commit',
    sql: `
      drop trigger events_notify on es.events;
      drop function es.notify_events();
    `,
  },
  {
    // Event data as the text it was written in: nothing queries inside the log, and jsonb
    // cost a conversion on every append and another on every read (3 to 4 µs an event
    // each way for a snapshot). The store refuses in Node what jsonb used to refuse
    // (U+0000, unpaired surrogates: see toParams), so the read models can still hold
    // everything the log does. Rewrites the table once.
    id: 'eventstore/005-json-text',
    sql: `
      alter table es.events alter column metadata drop default;
      alter table es.events
        alter column data type json using data::json,
        alter column metadata type json using metadata::json;
      alter table es.events alter column metadata set default '{}';
    `,
  },
];
