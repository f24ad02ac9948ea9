// Test database harness: every call gives a fresh, uniquely named database on a
// shared server, so test files (and tests) never see each other's rows.
// `npm test` (scripts/test.ts) starts one server and passes its admin URL in
// TEST_DATABASE_URL; a test file run by hand starts its own server, once per
// process, under the OS temp folder, and stops it when the process ends.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createPool } from '../../src/db/pool.ts';

export interface TestDatabase {
  readonly url: string;
  readonly pool: pg.Pool;
  /** Ends the pool and drops the database. */
  drop(): Promise<void>;
}

/** Throwaway clusters trade durability for speed. */
export const TEST_SERVER_SETTINGS = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: 200,
} as const;

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = process.env.TEST_DATABASE_URL ?? (await ownServerUrl());
  const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(adminUrl, `create database ${name}`);
  const url = withDatabase(adminUrl, name);
  const pool = createPool(url, { applicationName: 'vidtrack-test' });
  let dropped = false;
  return {
    url,
    pool,
    async drop() {
      if (dropped) return;
      dropped = true;
      // pool.end() waits for checked-out connections: one a failed test never
      // released must not hang the run, DROP ... FORCE cuts it.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pool.end(), new Promise((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
      // FORCE: a connection a test forgot to close must not keep the database alive.
      await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let ownServer: Promise<string> | undefined;

/** Started on first use only: files that never touch a database pay nothing. */
function ownServerUrl(): Promise<string> {
  ownServer ??= (async () => {
    // Imported here so that a run with TEST_DATABASE_URL never loads the server code.
    const { startEmbeddedPostgres } = await import('../../src/db/embedded.ts');
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-testdb-'));
    const server = await startEmbeddedPostgres({ dataDir, detached: false, settings: TEST_SERVER_SETTINGS });
    let stopped = false;
    const cleanUp = async () => {
      if (stopped) return;
      stopped = true;
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
    // The server does not hold the event loop open, so 'beforeExit' comes when
    // the tests are done; the stop keeps the loop busy until it finishes.
    process.once('beforeExit', () => void cleanUp());
    // process.exit() and signals skip 'beforeExit', and nothing asynchronous
    // can run then: an immediate shutdown, waited for synchronously.
    const stopNow = () => {
      if (stopped) return;
      stopped = true;
      killAndWait(server.pid);
      try {
        fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
      } catch {
        // a stray temp folder is the lesser harm
      }
    };
    process.once('exit', stopNow);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      process.once(signal, function onSignal() {
        stopNow();
        // Then die of the signal as if we had never listened, unless someone else handles it.
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    }
    return server.adminUrl;
  })();
  return ownServer;
}

function killAndWait(pid: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    return;
  }
  for (let i = 0; i < 100 && isRunning(pid); i++) Atomics.wait(pause, 0, 0, 20);
}

/** A dead child stays a zombie until Node reaps it, which cannot happen during a synchronous wait. */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}
