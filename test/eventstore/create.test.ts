// EVENT_STORE and EVENTSTORE_URL: read by src/config.ts, turned into an adapter by createEventStore.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createEventStore } from '../../src/eventstore/create.ts';
import { EventStoreDbStore } from '../../src/eventstore/eventstoredb.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';

test('config: EVENT_STORE defaults to postgres; eventstoredb needs EVENTSTORE_URL; anything else is refused', () => {
  assert.deepEqual(pick(loadConfig({}, [])), { eventStore: 'postgres', eventStoreUrl: null });
  assert.deepEqual(pick(loadConfig({ EVENT_STORE: 'eventstoredb', EVENTSTORE_URL: 'esdb://es:2113?tls=false' }, ['api'])), {
    eventStore: 'eventstoredb',
    eventStoreUrl: 'esdb://es:2113?tls=false',
  });
  assert.throws(() => loadConfig({ EVENT_STORE: 'eventstoredb' }, []), /needs EVENTSTORE_URL/);
  assert.throws(() => loadConfig({ EVENT_STORE: 'kafka' }, []), /EVENT_STORE must be one of postgres, eventstoredb/);
});

test('createEventStore: the adapter the configuration names (neither connects before it is used)', async () => {
  const pool = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none' });
  try {
    const postgres = createEventStore(loadConfig({}, []), pool);
    assert.ok(postgres instanceof PostgresEventStore);
    await postgres.close();
    const esdb = createEventStore(loadConfig({ EVENT_STORE: 'eventstoredb', EVENTSTORE_URL: 'esdb://127.0.0.1:1?tls=false' }, []), pool);
    assert.ok(esdb instanceof EventStoreDbStore);
    await esdb.close();
  } finally {
    await pool.end();
  }
});

const pick = ({ eventStore, eventStoreUrl }: { eventStore: string; eventStoreUrl: string | null }) => ({ eventStore, eventStoreUrl });
