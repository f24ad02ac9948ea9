// The contract's late-commit fixture for stores on PostgreSQL: an append held open in a
// transaction of its own until the test commits it.
import assert from 'node:assert/strict';
import type pg from 'pg';
import { appendManyOn } from '../../src/eventstore/postgres.ts';
import type { EventData } from '../../src/eventstore/port.ts';

export function beginAppendOn(pool: pg.Pool) {
  return async (streamId: string, events: readonly EventData[]) => {
    const client = await pool.connect();
    await client.query('begin');
    const [outcome] = await appendManyOn(client, [{ streamId, events, expectedRevision: 'any' }]);
    assert.ok(outcome!.ok);
    let done = false;
    return {
      async commit() {
        if (done) return;
        done = true;
        await client.query('commit');
        client.release();
      },
    };
  };
}
