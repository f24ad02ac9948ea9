// `npm start` stopped the ways it is stopped in practice.
// - SIGTERM to npm's own pid, as a supervisor sends it. npm passes the signal to its script's
//   shell; a shell that does not exec its command (dash, Debian's /bin/sh) died of it and left
//   the service running, orphaned, holding its port and database. The script now execs.
// - Ctrl-C on a terminal: SIGINT to the whole process group, npm included, which forwards it
//   to its child as well, so the service receives it twice. It used to run under the `tsx`
//   command, whose parent process re-sent it after 30 ms: the copy was taken for a second
//   Ctrl-C ("second signal: exiting now", code 1, no orderly stop), and a service whose event
//   loop was busy for 60 ms was SIGKILLed, its PostgreSQL and service.json left behind.
// - A second signal while the service is still starting, its PostgreSQL already up: the
//   server is stopped too, not left to nobody.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { SERVICE_FILE, type ServiceFile } from '../../src/service-file.ts';
import { isAlive, livePostmaster, root, stopPostgresOf } from '../support/process.ts';
import { quietPeriod, until, within } from '../support/wait.ts';

interface NpmStart {
  readonly npm: ChildProcess;
  readonly dataDir: string;
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  output(): string;
  /** service.json once the service is ready (its pid and URLs). */
  started(): Promise<ServiceFile>;
}

function npmStart(t: TestContext): NpmStart {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-npm-start-'));
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  let output = '';
  // A group of its own, as a terminal gives a foreground job: a Ctrl-C is kill(-pgid), and
  // cleanup can stop whatever is left if the test fails.
  const npm = spawn('npm', ['start'], {
    cwd: root,
    env: { ...inherited, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  npm.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(npm, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  t.after(async () => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    await stopPostgresOf(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    npm,
    dataDir,
    exited,
    output: () => output,
    async started() {
      const file = path.join(dataDir, SERVICE_FILE);
      const info = await until(
        `${file} written by the service started through npm`,
        () => (npm.exitCode !== null ? null : fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ServiceFile) : undefined),
        120_000,
      );
      if (info === null) throw new Error(`npm start exited during startup (code ${npm.exitCode})\n${output.slice(-2_000)}`);
      t.after(() => {
        if (isAlive(info.pid)) process.kill(info.pid, 'SIGKILL');
      });
      return info;
    },
  };
}

/** The parent pid of `pid` (/proc/<pid>/stat, field 4). */
function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** An orderly stop: the service ran its whole stop, and left neither its server nor its file. */
async function assertOrderlyStop(run: NpmStart, servicePid: number, api: string | null): Promise<void> {
  await until(`the service (pid ${servicePid}) to end`, () => (isAlive(servicePid) ? undefined : true), 15_000);
  const output = run.output();
  assert.match(output, /"msg":"stopping"/, 'the service ran its shutdown');
  assert.doesNotMatch(output, /second signal/, 'one signal was taken for two');
  assert.match(output, /"msg":"stopped"/, 'the service finished its shutdown');
  assert.equal(livePostmaster(run.dataDir), null, 'its embedded PostgreSQL stopped with it');
  assert.equal(fs.existsSync(path.join(run.dataDir, SERVICE_FILE)), false, 'service.json was left behind');
  if (api) await assert.rejects(fetch(`${api}/health`), 'the port is released');
}

test('SIGTERM to the npm process of `npm start` stops the service cleanly, and nothing is left running', async (t) => {
  const run = npmStart(t);
  const started = await run.started();
  assert.notEqual(started.pid, run.npm.pid, 'the service is a child of npm, as under a supervisor');
  const health = await fetch(`${started.api!}/health`);
  assert.equal(health.status, 200);

  process.kill(run.npm.pid!, 'SIGTERM');
  const [code, signal] = await within('npm start to exit after SIGTERM', run.exited, 30_000);
  await assertOrderlyStop(run, started.pid, started.api);
  assert.ok(code === 0 || signal === 'SIGTERM' || code === 143, `npm ended with code ${code}, signal ${signal}`);
});

test('Ctrl-C on `npm start` (SIGINT to its process group) is one orderly stop: code 0, nothing left running', async (t) => {
  const run = npmStart(t);
  const started = await run.started();
  // No `tsx` command between npm and the service to re-send (or SIGKILL) on its own.
  assert.equal(parentOf(started.pid), run.npm.pid, 'the service is npm\'s own child');
  assert.equal((await fetch(`${started.api!}/health`)).status, 200);

  process.kill(-run.npm.pid!, 'SIGINT');
  const [code, signal] = await within('npm start to exit after a Ctrl-C', run.exited, 30_000);
  await assertOrderlyStop(run, started.pid, started.api);
  assert.equal(code, 0, `npm ended with code ${code}, signal ${signal}\n${run.output().slice(-2_000)}`);
});

test('Ctrl-C on `npm start` while the service\'s event loop is busy still ends in an orderly stop', async (t) => {
  const run = npmStart(t);
  const started = await run.started();
  // Busy: stopped outright, so that it cannot acknowledge a signal. A `tsx` parent gave it
  // 30 ms, re-sent the signal, and SIGKILLed it 30 ms later; npm only forwards.
  process.kill(started.pid, 'SIGSTOP');
  try {
    process.kill(-run.npm.pid!, 'SIGINT');
    // Not a synchronization: time for a parent that would kill the busy service to do so.
    await quietPeriod(1_000);
    assert.ok(isAlive(started.pid), 'the busy service was killed while it could not answer');
  } finally {
    try {
      process.kill(started.pid, 'SIGCONT');
    } catch {
      // killed: the assertion above says so
    }
  }
  const [code, signal] = await within('npm start to exit after a Ctrl-C', run.exited, 30_000);
  await assertOrderlyStop(run, started.pid, started.api);
  assert.equal(code, 0, `npm ended with code ${code}, signal ${signal}\n${run.output().slice(-2_000)}`);
});

test('a second signal while the service starts, its PostgreSQL up already, stops that PostgreSQL too', async (t) => {
  const run = npmStart(t);
  const infoFile = path.join(run.dataDir, 'postgres.json');
  // The server runs and postgres.json names the service as its owner: the start goes on
  // (the application database, the migrations) and service.json is not written yet.
  const { servicePid, serverPid } = await until(
    'the service\'s embedded PostgreSQL to run, owned by the service',
    () => {
      if (run.npm.exitCode !== null) throw new Error(`npm start exited during startup\n${run.output().slice(-2_000)}`);
      const server = livePostmaster(run.dataDir);
      if (server === null || !fs.existsSync(infoFile)) return undefined;
      const info = JSON.parse(fs.readFileSync(infoFile, 'utf8')) as { pid?: number; ownerPid?: number };
      return info.pid === server && info.ownerPid !== undefined ? { servicePid: info.ownerPid, serverPid: server } : undefined;
    },
    120_000,
    10,
  );
  t.after(() => {
    if (isAlive(servicePid)) process.kill(servicePid, 'SIGKILL');
  });
  assert.equal(parentOf(servicePid), run.npm.pid, 'postgres.json names the service as the owner');
  // Two different signals: the second is not a copy of the first, it means "now". It is
  // sent once the first was taken (two sent at once can reach the process as one).
  process.kill(servicePid, 'SIGINT');
  await until('the service to log that it is stopping', () => (/"msg":"stopping"/.test(run.output()) ? true : undefined), 30_000, 10);
  process.kill(servicePid, 'SIGTERM');
  await within('npm start to exit after two signals', run.exited, 30_000);
  await until(`the service (pid ${servicePid}) to end`, () => (isAlive(servicePid) ? undefined : true), 15_000);
  // The service asked for a fast shutdown and exited; the server finishes it by itself.
  await until(`its PostgreSQL (pid ${serverPid}) to stop`, () => (isAlive(serverPid) ? undefined : true), 30_000);
  assert.match(run.output(), /second signal: exiting now/);
});
