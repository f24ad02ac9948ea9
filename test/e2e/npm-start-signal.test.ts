// `npm start` stopped the way a supervisor stops it: SIGTERM to npm's own pid, not to its
// process group. npm passes the signal to its script's shell; a shell that does not exec its
// command (dash, Debian's /bin/sh) died of it and left the service running, orphaned, holding
// its port and database. The script now execs, so the signal reaches the service.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SERVICE_FILE, type ServiceFile } from '../../src/service-file.ts';
import { isAlive, livePostmaster, root, stopPostgresOf } from '../support/process.ts';
import { until, within } from '../support/wait.ts';

test('SIGTERM to the npm process of `npm start` stops the service cleanly, and nothing is left running', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-npm-start-'));
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  let output = '';
  // A group of its own, so that cleanup can stop whatever is left if the test fails.
  const npm = spawn('npm', ['start'], {
    cwd: root,
    env: { ...inherited, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(npm, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  let servicePid: number | null = null;
  t.after(async () => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
    if (servicePid !== null && isAlive(servicePid)) process.kill(servicePid, 'SIGKILL');
    await stopPostgresOf(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const file = path.join(dataDir, SERVICE_FILE);
  const started = await until(
    `${file} written by the service started through npm`,
    () => (npm.exitCode !== null ? null : fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ServiceFile) : undefined),
    120_000,
  );
  if (started === null) throw new Error(`npm start exited during startup (code ${npm.exitCode})\n${output.slice(-2_000)}`);
  servicePid = started.pid;
  assert.notEqual(servicePid, npm.pid, 'the service is a child of npm, as under a supervisor');
  const health = await fetch(`${started.api!}/health`);
  assert.equal(health.status, 200);

  process.kill(npm.pid!, 'SIGTERM');
  const [code, signal] = await within('npm start to exit after SIGTERM', exited, 30_000);
  await until(`the service (pid ${servicePid}) to end`, () => (isAlive(servicePid!) ? undefined : true), 15_000);
  assert.match(output, /"msg":"stopping"/, 'the service ran its shutdown');
  assert.match(output, /"msg":"stopped"/, 'the service finished its shutdown');
  assert.equal(livePostmaster(dataDir), null, 'its embedded PostgreSQL stopped with it');
  assert.ok(code === 0 || signal === 'SIGTERM' || code === 143, `npm ended with code ${code}, signal ${signal}`);
  await assert.rejects(fetch(`${started.api!}/health`), 'the port is released');
});
