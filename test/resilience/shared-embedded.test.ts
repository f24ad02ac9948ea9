// One data folder's embedded PostgreSQL used by several processes at once: the README's "Try
// it" runs `npm start &` and then the admin CLI at once, and whichever of the two comes first
// starts the server. When the CLI came first, it used to stop the server on exit, under the
// running service ("terminating connection due to administrator command"; the service exited
// with "could not start"). A process done with the server now stops it only if no other live
// process uses it, and hands it over otherwise (src/db/embedded.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.ts';
import { connectedTo, isAlive, livePostmaster, root, serviceProcess } from '../support/process.ts';
import { until, within } from '../support/wait.ts';

interface Info {
  pid?: number;
  ownerPid?: number;
}

function readInfo(dataDir: string): Info | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as Info;
  } catch {
    return undefined;
  }
}

test('the admin CLI that started the server before the service hands it over on exit: the service goes on, and stops it last', async (t) => {
  const service = serviceProcess();
  let ours: EmbeddedPostgres | null = null;
  t.after(async () => {
    await ours?.stop();
    await service.cleanup();
  });

  // The CLI first, on the fresh folder: it starts the server, and waits for a projector to
  // show its change (the service's, once it runs).
  let stdout = '';
  let stderr = '';
  const cli = spawn(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', 'org', 'create', '--name', 'Acme', '--email', 'ops@acme.test', '--plan', 'pro'], {
    cwd: root,
    env: service.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cli.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  cli.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const cliExit = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  t.after(() => {
    if (cli.exitCode === null && cli.signalCode === null) cli.kill('SIGKILL');
  });
  const server = await until(
    'the admin CLI to start the embedded PostgreSQL, own it, and be done starting it (the folder\'s lock released)',
    () => {
      if (cli.exitCode !== null) throw new Error(`the admin CLI exited first (code ${cli.exitCode}): ${stderr}`);
      const running = livePostmaster(service.dataDir);
      const info = readInfo(service.dataDir);
      const starting = fs.existsSync(path.join(service.dataDir, '.start.lock'));
      return running !== null && info?.pid === running && info.ownerPid === cli.pid && !starting ? running : undefined;
    },
    120_000,
    10,
  );

  // The service, while the CLI runs: it reuses the CLI's server. The CLI is held still until
  // the service is connected (it would give up waiting for a projector after 30 s, and exit).
  process.kill(cli.pid!, 'SIGSTOP');
  const starting = service.start();
  starting.catch(() => undefined); // awaited below; a failed wait must not leave it unhandled
  try {
    await until('the service to connect to the server', () => connectedTo(service.dataDir, 'vidtrack-all'), 120_000, 100);
  } finally {
    process.kill(cli.pid!, 'SIGCONT');
  }
  await starting;
  assert.equal(livePostmaster(service.dataDir), server, 'the service reused the running server');

  const [code] = await within('the admin CLI to exit', cliExit, 120_000);
  assert.equal(code, 0, stderr);
  const orgId = (JSON.parse(stdout) as { org_id: string }).org_id;
  assert.match(orgId, /^org_/);

  // The CLI is gone; the service and its database are not.
  assert.equal(livePostmaster(service.dataDir), server, 'the CLI stopped the server on exit');
  assert.ok(service.pid !== null && isAlive(service.pid), `the service died with the CLI's exit: ${service.lastOutput()}`);
  assert.equal(readInfo(service.dataDir)?.ownerPid, service.pid, 'the service owns the server it runs on');
  assert.equal((await fetch(`${service.healthBase}/health`)).status, 200);
  const { api_key: key } = (await service.admin('key', 'create', '--org', orgId, '--name', 'laptop')) as { api_key: string };
  const usage = await service.api('GET', '/usage', key);
  assert.equal(usage.status, 200, JSON.stringify(usage.body));
  assert.equal(livePostmaster(service.dataDir), server, 'the second CLI stopped the server on exit');

  // The other way round: a process still using the server when the service stops (here this
  // test) keeps it running, and stops it when it is done, as the last one.
  ours = await startEmbeddedPostgres({ dataDir: service.dataDir });
  assert.equal(ours.pid, server);
  assert.equal(ours.owned, false, 'the service owns it while it runs');
  await service.stop();
  assert.equal(livePostmaster(service.dataDir), server, 'the service stopped a server still in use');
  assert.equal(ours.owned, true, 'the service handed the server over on its way out');
  await ours.stop();
  ours = null;
  assert.equal(livePostmaster(service.dataDir), null, 'the last user left the server running');
});
