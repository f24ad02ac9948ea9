// The event store a process runs on, chosen by EVENT_STORE (src/config.ts). With EventStoreDB
// only the log moves there: read models, checkpoints, leases and the schedule stay in the
// PostgreSQL of `pool`.
import type pg from 'pg';
import type { Config } from '../config.ts';
import { EventStoreDbStore, type EventStoreDbOptions } from './eventstoredb.ts';
import type { EventStore } from './port.ts';
import { PostgresEventStore } from './postgres.ts';

export interface CreateEventStoreOptions {
  /** Told when an EventStoreDB subscription is replaced (a dropped or silent connection). */
  readonly onResubscribe?: EventStoreDbOptions['onResubscribe'];
}

export function createEventStore(
  config: Pick<Config, 'eventStore' | 'eventStoreUrl'>,
  pool: pg.Pool,
  options: CreateEventStoreOptions = {},
): EventStore {
  switch (config.eventStore) {
    case 'postgres':
      return new PostgresEventStore(pool);
    case 'eventstoredb':
      if (!config.eventStoreUrl) throw new Error('EVENT_STORE=eventstoredb needs EVENTSTORE_URL');
      return new EventStoreDbStore(config.eventStoreUrl, { onResubscribe: options.onResubscribe });
  }
}
