// A service killed with -9 leaves its embedded PostgreSQL running (the server has a process
// group of its own, so that a Ctrl-C reaches only the app). The next start in the same data
// folder must take that server over instead of failing or starting a second one, and its
// clean stop must leave no server of that folder behind.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { isAlive, livePostmaster, serviceProcess } from '../support/process.ts';
import { until } from '../support/wait.ts';

/** Postmasters (not backends: those have no -D) running on this data folder, by their command line. */
function postmastersOf(dataDir: string): number[] {
  const clusterDir = path.join(dataDir, 'pg');
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      const d = args.indexOf('-D');
      if (d >= 0 && args[d + 1] === clusterDir && isAlive(Number(entry))) found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

test('a start after kill -9 takes over the embedded PostgreSQL left running, and its stop leaves none', { skip: !fs.existsSync('/proc/self') && 'needs /proc' }, async (t) => {
  const service = serviceProcess();
  t.after(() => service.cleanup());
  await service.start();
  const first = livePostmaster(service.dataDir);
  assert.ok(first, 'the service started an embedded PostgreSQL');

  await service.stop('SIGKILL');
  assert.deepEqual(postmastersOf(service.dataDir), [first], 'the killed service left its server running');

  await service.start();
  const { status } = await fetch(`${service.base}/health`);
  assert.equal(status, 200);
  assert.deepEqual(postmastersOf(service.dataDir), [first], 'the server was taken over, not doubled');

  await service.stop();
  assert.deepEqual(postmastersOf(service.dataDir), [], 'no server of this data folder remains after a clean stop');
});

test('a start after the service and its server were both killed -9 recovers the folder and leaves nothing behind', { skip: !fs.existsSync('/proc/self') && 'needs /proc' }, async (t) => {
  const service = serviceProcess();
  t.after(() => service.cleanup());
  await service.start();
  const first = livePostmaster(service.dataDir);
  assert.ok(first);
  // A machine-wide OOM kill or `kill -9 -- -<pgid>` of both groups: a stale postmaster.pid stays.
  await service.stop('SIGKILL');
  process.kill(first, 'SIGKILL');
  await until(`postmaster ${first} to die of SIGKILL`, () => (postmastersOf(service.dataDir).length === 0 ? true : undefined), 15_000);

  await service.start();
  assert.equal(postmastersOf(service.dataDir).length, 1);
  await service.stop();
  assert.deepEqual(postmastersOf(service.dataDir), []);
});

test('a start after kill -9 takes the server over even when the dead owner\'s pid now belongs to another process', { skip: !fs.existsSync('/proc/self') && 'needs /proc' }, async (t) => {
  const service = serviceProcess();
  t.after(() => service.cleanup());
  await service.start();
  const first = livePostmaster(service.dataDir);
  assert.ok(first);
  await service.stop('SIGKILL');
  // The killed service's pid is handed to an unrelated live process (here: this test process),
  // as happens on a busy machine or in a restarted container.
  const infoFile = path.join(service.dataDir, 'postgres.json');
  const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as { ownerPid: number };
  fs.writeFileSync(infoFile, JSON.stringify({ ...info, ownerPid: process.pid }), { mode: 0o600 });

  await service.start();
  assert.deepEqual(postmastersOf(service.dataDir), [first]);
  await service.stop();
  assert.deepEqual(postmastersOf(service.dataDir), [], 'the server was left to a process that never started it');
});
