// A start of the embedded server that fails after the server itself came up (postgres.json
// not written on a full disk, the folder's lock not released, the caller's onServer throwing)
// stops that server again: the caller gets an error and no handle, so nobody else would.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { startEmbeddedPostgres } from '../../src/db/embedded.ts';
import { livePostmaster, stopPostgresOf } from '../support/process.ts';

const settings = { fsync: 'off' };

/** A folder whose cluster exists already (initdb done, server stopped): the next start only starts the server. */
async function initializedFolder(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-failed-start-'));
  t.after(async () => {
    // A server left running by a failure of this test is stopped all the same.
    await stopPostgresOf(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  await (await startEmbeddedPostgres({ dataDir, detached: false, settings })).stop();
  assert.equal(livePostmaster(dataDir), null);
  return dataDir;
}

test('postgres.json that cannot be written once the server runs: the start fails and the server is stopped', async (t) => {
  const dataDir = await initializedFolder(t);
  // writeInfo() writes postgres.json.<pid>.tmp and renames it: a folder in its place fails
  // the write as a full disk would, and only the write, not the start of the server.
  fs.mkdirSync(path.join(dataDir, `postgres.json.${process.pid}.tmp`));
  await assert.rejects(startEmbeddedPostgres({ dataDir, detached: false, settings }), /EISDIR|illegal operation on a directory/);
  assert.equal(livePostmaster(dataDir), null, 'the server started for the failed start is still running');
});

test('an onServer that throws fails the start, and the server it was told of is stopped', async (t) => {
  const dataDir = await initializedFolder(t);
  let told: number | null = null;
  await assert.rejects(
    startEmbeddedPostgres({
      dataDir,
      detached: false,
      settings,
      onServer: (server) => {
        told = server.pid;
        throw new Error('stopped while starting');
      },
    }),
    /stopped while starting/,
  );
  assert.ok(told, 'onServer was called with the running server');
  assert.equal(livePostmaster(dataDir), null, `the server (pid ${told}) is still running`);
});

test('a folder lock that cannot be released after the server started: the start fails and the server is stopped', async (t) => {
  const dataDir = await initializedFolder(t);
  const lock = path.join(dataDir, '.start.lock');
  await assert.rejects(
    startEmbeddedPostgres({
      dataDir,
      detached: false,
      settings,
      // While the lock is held: its file becomes a folder with something in it, which the
      // release (rmSync, not recursive) cannot remove, as it could not on a read-only disk.
      onServer: () => {
        fs.rmSync(lock);
        fs.mkdirSync(lock);
        fs.writeFileSync(path.join(lock, 'x'), '');
      },
    }),
  );
  assert.equal(livePostmaster(dataDir), null, 'the server is still running');
  fs.rmSync(lock, { recursive: true, force: true });
});
