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
  {
    // The readers' horizon (postgres.ts, horizon.ts): the oldest transaction in progress in the
    // calling statement's snapshot that is not registered in es.horizon_exempt, else the
    // snapshot's xmax. Registered are transactions that write no event and run long (a
    // rebuild's replays). A row outliving its transaction (a crash) is harmless, as transaction
    // ids are never used again; registering prunes them.
    //
    // STABLE: the function runs in the caller's snapshot (pg_current_snapshot() is the active
    // one, and its SELECT sees es.horizon_exempt as of that same snapshot); readers call it as
    // a scalar subquery, once per statement. PL/pgSQL keeps its plan for the session: the same
    // text written into every reader's query was planned with it each time (+0.1 ms a read).
    // ORDER BY ... LIMIT 1: there is no min(xid8) before PostgreSQL 16.
    id: 'eventstore/006-horizon-exempt',
    sql: `
      create table es.horizon_exempt (
        transaction_id xid8 primary key,
        since timestamptz not null default now()
      );

      create function es.log_horizon() returns xid8
        language plpgsql stable parallel restricted as $$
      declare
        snapshot pg_snapshot := pg_current_snapshot();
        horizon xid8;
      begin
        select x into horizon from pg_snapshot_xip(snapshot) as x
          where not exists (select 1 from es.horizon_exempt e where e.transaction_id = x)
          order by x limit 1;
        return coalesce(horizon, pg_snapshot_xmax(snapshot));
      end $$;
    `,
  },
];
