// An idle database connection the server cuts is logged as one short warning: what went wrong,
// not the pg client pg-pool hangs on the error (with the texts of its queries).
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { startTestService } from '../support/service.ts';
import { until } from '../support/wait.ts';

test('an idle connection cut by the server is one short warning, without the client', async (t) => {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  const service = await startTestService({ serviceLogStream: stream });
  t.after(() => service.close());
  // Queries through the service's pool, which then keeps their connections idle.
  await service.organization({ usd: '1' });

  const { rows } = await service.db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND pid <> pg_backend_pid() AND query NOT ILIKE 'LISTEN%'`,
  );
  assert.ok(rows.length > 0, 'idle connections to cut');
  await service.db.pool.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [rows.map((r) => r.pid)]);

  const line = await until('the warning of a lost connection', async () => lines.find((l) => l.includes('idle database connection lost')), 10_000);
  const record = JSON.parse(line) as { level: number; err?: { message?: unknown; client?: unknown } };
  assert.equal(record.level, 40, 'a warning');
  assert.equal(typeof record.err?.message, 'string');
  assert.equal(record.err?.client, undefined, 'no client on the logged error');
  assert.ok(line.length < 1_000, `a short line (${line.length} characters)`);
});
