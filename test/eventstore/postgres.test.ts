import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import { withTransaction } from '../../src/db/pool.ts';
import { appendManyOn, PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { eventStoreMigrations } from '../../src/eventstore/postgres-schema.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { createTestDatabase } from '../support/db.ts';
import { until, within } from '../support/wait.ts';
import { beginAppendOn } from './postgres-late-commit.ts';
import { eventStoreContract, type ContractFixture } from './contract.ts';

async function makeStore(): Promise<ContractFixture & { pool: import('pg').Pool }> {
  const db = await createTestDatabase();
  await migrate(db.pool, eventStoreMigrations);
  const store = new PostgresEventStore(db.pool, { pollIntervalMs: 200 });
  return {
    store,
    pool: db.pool,
    async teardown() {
      await store.close();
      await db.drop();
    },
    beginAppend: beginAppendOn(db.pool),
  };
}

eventStoreContract('postgres', makeStore);

test('postgres: later commits are held back while an earlier transaction is open', async () => {
  const fixture = await makeStore();
  const { store } = fixture;
  const seen: RecordedEvent[] = [];
  const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
  const late = await fixture.beginAppend!('late', [{ type: 'E', data: {} }]);
  try {
    const early = await store.append('early', [{ type: 'E', data: {} }], 'no_stream');
    // Not a synchronization: that 'early' is NOT delivered has no event to wait for. 300 ms is
    // more than the subscriber's poll interval (200 ms), so it has polled at least once meanwhile.
    await sleep(300);
    assert.equal(seen.length, 0, 'nothing after the open transaction is visible yet');
    assert.equal(await store.headPosition(), null);
    await late.commit();
    await waitFor(() => seen.length === 2, 'both events once the open transaction commits');
    assert.deepEqual(seen.map((e) => e.streamId), ['late', 'early']);
    // Until: a write still open elsewhere on the server (another test's) holds the head back a moment.
    await until('headPosition to be the early append', async () => ((await store.headPosition())?.prepare === early.position.prepare ? true : undefined), 10_000);
    assert.deepEqual(await store.headPosition(), early.position);
  } finally {
    sub.unsubscribe();
    await late.commit();
    await fixture.teardown();
  }
});

test('postgres: positions beyond 2^53 stay exact', async () => {
  const fixture = await makeStore();
  try {
    await fixture.pool.query(`select setval(pg_get_serial_sequence('es.events', 'position'), 9007199254740993)`);
    const result = await fixture.store.append('big', [{ type: 'E', data: {} }], 'no_stream');
    assert.equal(result.position.prepare, 9007199254740994n);
    const [event] = await fixture.store.readStream('big');
    assert.equal(event!.position.prepare, 9007199254740994n);
    const from = { commit: result.position.commit, prepare: 9007199254740993n };
    const page = await new Promise<RecordedEvent[]>((resolve) => {
      const sub = fixture.store.subscribeAll(from).subscribe((p) => {
        sub.unsubscribe();
        resolve(p);
      });
    });
    assert.equal(page[0]!.position.prepare, 9007199254740994n);
  } finally {
    await fixture.teardown();
  }
});

test('postgres: migrations run once, also when several processes start together', async () => {
  const fixture = await makeStore();
  try {
    const runs = await Promise.all([1, 2, 3].map(() => migrate(fixture.pool, eventStoreMigrations)));
    assert.deepEqual(runs, [[], [], []]);
    const { rows } = await fixture.pool.query('select id from public.schema_migrations');
    assert.deepEqual(rows.map((r) => r.id), eventStoreMigrations.map((m) => m.id));
    await assert.rejects(migrate(fixture.pool, [{ id: 'eventstore/001-events', sql: 'select 1' }]), /changed after it was applied/);
  } finally {
    await fixture.teardown();
  }
});

test('postgres: withTransaction rolls back when the function throws', async () => {
  const fixture = await makeStore();
  try {
    await assert.rejects(
      withTransaction(fixture.pool, async (client) => {
        await appendManyOn(client, [{ streamId: 'gone', expectedRevision: 'no_stream', events: [{ type: 'E', data: {} }] }]);
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.deepEqual(await fixture.store.readStream('gone'), []);
    // The stream row was rolled back too: no_stream still holds.
    await fixture.store.append('gone', [{ type: 'E', data: {} }], 'no_stream');
  } finally {
    await fixture.teardown();
  }
});

test('postgres: a batch that loses a race on the pool is written again the safe way: the lost stream conflicts, the others land', async () => {
  const fixture = await makeStore();
  const held = await fixture.beginAppend!('raced', [{ type: 'Held', data: {} }]);
  try {
    // The batch cannot see the held revision 0 and tries to write it too: it waits on the index.
    const batch = fixture.store.appendMany([
      { streamId: 'fresh', expectedRevision: 'no_stream', events: [{ type: 'E', data: {} }] },
      { streamId: 'raced', expectedRevision: 'no_stream', events: [{ type: 'E', data: {} }] },
    ]);
    await until('the batch to wait on the held transaction', async () => {
      const { rows } = await fixture.pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%insert into es.events%'`);
      return rows.length > 0 ? true : undefined;
    }, 10_000);
    await held.commit();
    const [fresh, raced] = await batch;
    assert.ok(fresh!.ok, 'the stream nobody raced is written');
    assert.equal(fresh.result.nextExpectedRevision, 0n);
    assert.ok(!raced!.ok && 'conflict' in raced, 'the raced stream reports its conflict');
    assert.equal(raced.conflict.actual, 0n);
    assert.deepEqual((await fixture.store.readStream('raced')).map((e) => e.type), ['Held']);
    assert.deepEqual((await fixture.store.readStream('fresh')).map((e) => e.type), ['E']);
  } finally {
    await held.commit();
    await fixture.teardown();
  }
});

test('postgres: event data holding U+0000 (which the read models cannot hold) is refused, naming the stream, before anything is written', async () => {
  const fixture = await makeStore();
  try {
    await assert.rejects(
      fixture.store.appendMany([
        { streamId: 'fine', expectedRevision: 'no_stream', events: [{ type: 'E', data: { text: 'a \\u0000 escape is fine' } }] },
        { streamId: 'bad', expectedRevision: 'no_stream', events: [{ type: 'E', data: { title: 'nul \u0000 inside' } }] },
      ]),
      (error: Error) => error instanceof TypeError && /stream bad/.test(error.message),
    );
    assert.deepEqual(await fixture.store.readStream('fine'), []);
  } finally {
    await fixture.teardown();
  }
});

test('postgres: appends wake a caught-up subscription through NOTIFY (sent after they commit), not at its next poll', async () => {
  const db = await createTestDatabase();
  await migrate(db.pool, eventStoreMigrations);
  const store = new PostgresEventStore(db.pool, { pollIntervalMs: 60_000 });
  const seen: RecordedEvent[] = [];
  const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
  try {
    // Idle polls back off from 10 ms, doubling: after 2.6 s the next one is more than 2.5 s away.
    await sleep(2_600);
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(`woken-${i}`, [{ type: 'E', data: {} }], 'no_stream')));
    await waitFor(() => seen.length === 20, 'the 20 concurrent appends', 1_000);
    assert.ok(Date.now() - t0 < 1_000);
  } finally {
    sub.unsubscribe();
    await store.close();
    await db.drop();
  }
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

test('postgres: a subscription with minReadIntervalMs follows full pages at once, then reads no more than once an interval, and stops without waiting it out', async () => {
  const db = await createTestDatabase();
  await migrate(db.pool, eventStoreMigrations);
  const store = new PostgresEventStore(db.pool, { pollIntervalMs: 60_000 });
  await store.append('paced', Array.from({ length: 5 }, (_, i) => ({ type: 'E', data: { i } })), 'no_stream');
  const paced: RecordedEvent[][] = [];
  const prompt: RecordedEvent[] = [];
  const subs = [
    store.subscribeAll(null, { batchSize: 2, minReadIntervalMs: 60_000 }).subscribe((page) => paced.push(page)),
    store.subscribeAll(null).subscribe((page) => prompt.push(...page)),
  ];
  try {
    // Pages of 2, 2 and 1: the full ones are followed at once, not a minute apart.
    await until('the paced subscription to read the 5 events', () => (paced.flat().length === 5 ? true : undefined), 5_000, 10);
    assert.deepEqual(paced.map((page) => page.length), [2, 2, 1]);
    await store.append('paced', [{ type: 'E', data: { i: 5 } }], 4n);
    await until('the prompt subscription to be woken for the new event', () => (prompt.length === 6 ? true : undefined), 5_000, 10);
    // An absence can only be watched for a while: a read would have followed the NOTIFY within this.
    await sleep(300);
    assert.equal(paced.flat().length, 5, 'the paced subscription read again within its interval');
    for (const sub of subs) sub.unsubscribe();
    await within('the store to close while a subscription waits out its interval', store.close(), 5_000);
  } finally {
    for (const sub of subs) sub.unsubscribe();
    await store.close();
    await db.drop();
  }
});

test('postgres: subscriptions woken by the same appends share the reads of the log, and each gets every event once, in order, without polling', async () => {
  const db = await createTestDatabase();
  await migrate(db.pool, eventStoreMigrations);
  // Polls a minute apart: a subscription that went to sleep short of what woke it would hang here.
  const store = new PostgresEventStore(db.pool, { pollIntervalMs: 60_000 });
  let rowsRead = 0;
  const query = db.pool.query.bind(db.pool) as (...args: unknown[]) => Promise<{ rows: unknown[] }>;
  (db.pool as unknown as { query: typeof query }).query = async (...args) => {
    const result = await query(...args);
    const text = typeof args[0] === 'string' ? args[0] : '';
    if (text.includes('(transaction_id, position) >') && text.includes('limit $3')) rowsRead += result.rows.length;
    return result;
  };
  const seen: RecordedEvent[][] = [[], [], []];
  const subs = seen.map((into) => store.subscribeAll(null, { batchSize: 50 }).subscribe((page) => into.push(...page)));
  try {
    const writers = 20;
    const batches = 10;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let b = 0; b < batches; b++) await store.append(`shared-${w}`, Array.from({ length: 5 }, () => ({ type: 'E', data: { w, b } })), b === 0 ? 'no_stream' : BigInt(b * 5 - 1));
      }),
    );
    const total = writers * batches * 5;
    await until('every subscription to see all 1,000 events', () => (seen.every((s) => s.length >= total) ? true : undefined), 10_000);
    const read = rowsRead;
    const log = (await store.readAll(null, total + 1)).map((e) => e.id);
    for (const s of seen) assert.deepEqual(s.map((e) => e.id), log, 'every event once, in log order');
    // Read separately, the three would read 3,000 rows.
    assert.ok(read < 1.5 * total, `the subscriptions read ${read} rows of the log for ${total} events`);
  } finally {
    for (const sub of subs) sub.unsubscribe();
    await store.close();
    await db.drop();
  }
});

test('postgres: the log in parts (a rebuild reads one a connection) holds each event up to the position once, whatever the parts', async () => {
  const fixture = await makeStore();
  try {
    // Enough events for many pages, some appended after the position read below.
    const appends = Array.from({ length: 40 }, (_, s) => ({ streamId: `parts-${s}`, events: Array.from({ length: 50 }, (_, i) => ({ type: 'E', data: { s, i, pad: 'x'.repeat(200) } })), expectedRevision: 'no_stream' as const }));
    const [first] = await fixture.store.appendMany(appends.slice(0, 30));
    assert.ok(first);
    const { rows: [head] } = await fixture.pool.query<{ commit: string; prepare: string }>(
      `SELECT transaction_id::text AS commit, position::text AS prepare FROM es.events ORDER BY transaction_id DESC, position DESC LIMIT 1`,
    );
    const upTo = { commit: BigInt(head!.commit), prepare: BigInt(head!.prepare) };
    await fixture.store.appendMany(appends.slice(30));
    const log = fixture.store.logInDatabase!(fixture.pool)!;
    const expected = await log.countUpTo(fixture.pool, upTo);
    assert.equal(expected, 1500);
    for (const parts of [1, 3, 8, 400]) {
      const positions: string[] = [];
      for (const part of await log.partsUpTo(fixture.pool, upTo, parts)) {
        const { rows } = await fixture.pool.query<{ position: string }>(`SELECT log.position::text AS position FROM ${part}`);
        positions.push(...rows.map((r) => r.position));
      }
      assert.equal(positions.length, expected, `${parts} parts hold every event up to the position`);
      assert.equal(new Set(positions).size, expected, `${parts} parts share no event`);
    }
  } finally {
    await fixture.teardown();
  }
});

test('postgres: a transaction exempt from the horizon (a rebuild replay: it appends nothing) holds no reader back; any other open transaction with an id still does', async () => {
  const fixture = await makeStore();
  const { store, pool } = fixture;
  const log = store.logInDatabase!(pool)!;
  const seen: RecordedEvent[] = [];
  const sub = store.subscribeAll(null).subscribe((page) => seen.push(...page));
  const exempt = await pool.connect();
  const other = await pool.connect();
  let exemption: Awaited<ReturnType<typeof log.exemptFromHorizon>> | undefined;
  try {
    // Held open the way a rebuild's replay is: a transaction with an id, registered as exempt.
    await exempt.query('begin');
    exemption = await log.exemptFromHorizon(exempt);
    await exempt.query('create table replay_scratch (n int)');
    const { rows: registered } = await pool.query<{ id: string }>('select transaction_id::text as id from es.horizon_exempt');
    assert.deepEqual(registered.map((r) => r.id), [exemption.transactionId.toString()]);

    const during = await store.append('during-exempt', [{ type: 'E', data: {} }], 'no_stream');
    // Deadlines, not clocks: another test's write elsewhere on the server may hold the horizon a moment.
    await waitFor(() => seen.some((e) => e.streamId === 'during-exempt'), 'the append made while the exempt transaction is open, delivered', 20_000);
    await until('readAll to return it', async () => ((await store.readAll(null, 10)).some((e) => e.streamId === 'during-exempt') ? true : undefined), 20_000);

    // A transaction that is not exempt, holding an id (it may still append), holds readers back.
    await other.query('begin');
    await other.query('select pg_current_xact_id()');
    const held = await store.append('held-back', [{ type: 'E', data: {} }], 'no_stream');
    assert.deepEqual(await store.readAll(during.position, 10), [], 'nothing after the open, not exempt, transaction is readable');
    assert.equal(await store.countEventsAfter(during.position, 10), 0);
    assert.ok(!seen.some((e) => e.streamId === 'held-back'));
    await other.query('commit');
    await waitFor(() => seen.some((e) => e.streamId === 'held-back'), 'the held-back append once the other transaction ended', 20_000);
    const read = await until('readAll to return the held-back append', async () => {
      const page = await store.readAll(during.position, 10);
      return page.length > 0 ? page : undefined;
    }, 20_000);
    assert.deepEqual(read.map((e) => e.position), [held.position]);
    assert.deepEqual(seen.map((e) => e.streamId), ['during-exempt', 'held-back'], 'each once, in order');

    // An exempt transaction must not append: its events are refused before they could commit.
    await appendManyOn(exempt, [{ streamId: 'from-exempt', events: [{ type: 'E', data: {} }], expectedRevision: 'no_stream' }]);
    await assert.rejects(exemption.beforeCommit(), /exempt from the log horizon/);
    await exempt.query('rollback');
  } finally {
    sub.unsubscribe();
    await exempt.query('rollback').catch(() => undefined);
    await other.query('rollback').catch(() => undefined);
    await exemption?.end();
    exempt.release();
    other.release();
  }
  try {
    const { rows } = await pool.query('select * from es.horizon_exempt');
    assert.deepEqual(rows, [], 'the exemption ended with its transaction');
    assert.deepEqual((await store.readStream('from-exempt')), []);
  } finally {
    await fixture.teardown();
  }
});
