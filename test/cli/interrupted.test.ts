// A command-line tool stopped by Ctrl-C or SIGTERM while it uses the embedded PostgreSQL it
// started (DATABASE_URL unset): it must stop the server before it exits, as close() does at
// the end of a run (src/cli/connect.ts), not leave it running with postgres.json naming a
// dead process as its owner.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { connectedTo, embeddedOwner, livePostmaster, root, serviceProcess } from '../support/process.ts';
import { until, within } from '../support/wait.ts';

/** Startup includes initdb on a fresh folder: slow on a busy 2-core machine. */
const START_TIMEOUT_MS = 120_000;
/** The tool's close: its pool, then the server's fast shutdown. */
const EXIT_TIMEOUT_MS = 30_000;

test('SIGINT or SIGTERM on the admin CLI that started the embedded PostgreSQL stops the server, then exits 130 or 143', async (t) => {
  // Only a data folder and its environment (no service is started); cleanup() stops any
  // server left on the folder, also when an assertion fails.
  const folder = serviceProcess();
  t.after(() => folder.cleanup());

  for (const [signal, expected] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    // With no projector running, `org create` waits up to 30 s for the read models to show it.
    let stderr = '';
    const cli = spawn(process.execPath, ['--import', 'tsx', 'scripts/admin.ts', 'org', 'create', '--name', 'Acme', '--email', 'ops@acme.test'], {
      cwd: root,
      env: folder.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    cli.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(cli, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    t.after(() => {
      if (cli.exitCode === null && cli.signalCode === null) cli.kill('SIGKILL');
    });

    await until(
      `the admin CLI to start the embedded PostgreSQL, own it, and connect to it (before ${signal})`,
      async () => {
        if (cli.exitCode !== null) throw new Error(`the admin CLI exited first (code ${cli.exitCode}): ${stderr}`);
        const server = livePostmaster(folder.dataDir);
        return server !== null && embeddedOwner(folder.dataDir) === cli.pid ? connectedTo(folder.dataDir, 'vidtrack-admin') : undefined;
      },
      START_TIMEOUT_MS,
      100,
    );
    const server = livePostmaster(folder.dataDir);

    cli.kill(signal);
    const [code, killedBy] = await within(`the admin CLI to exit after ${signal}`, exited, EXIT_TIMEOUT_MS);
    assert.equal(killedBy, null, `the admin CLI died of ${killedBy} instead of closing: ${stderr}`);
    assert.equal(code, expected, stderr);
    assert.equal(livePostmaster(folder.dataDir), null, `the admin CLI exited on ${signal} and left its embedded PostgreSQL (pid ${server}) running`);
  }
});
