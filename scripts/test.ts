// `npm test`: one throwaway PostgreSQL for the whole run (each test file makes
// its own databases on it through test/support/db.ts), every test/**/*.test.ts
// file found here rather than by a shell glob (sh's `**` is not recursive), and
// the exit code of node's test runner.
//
//   npm test                                    all files
//   npm test -- test/eventstore/postgres.test.ts   only these files
//   npm test -- --test-name-pattern=subscribe   extra flags go to node --test
//
// Nothing the run starts outlives it, whether it passes, fails or is interrupted:
// - Everything below the test runner carries VIDTRACK_TEST_RUN in its environment and
//   has a temp folder inside this run's folder (TMPDIR), so whatever is still running
//   when the runner has exited (a service or an embedded PostgreSQL a test forgot, or
//   could not stop because it was killed) is found in /proc, killed, and reported; such
//   a leftover fails the run, because a test that leaks processes is a test bug.
// - A SIGINT or SIGTERM is passed to the runner's process group; if the runner has not
//   wound down within RUNNER_STOP_MS, the group is killed.
// - Each test has a deadline (--test-timeout, unless one is given), so a hung test
//   fails instead of hanging the run.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { TEST_SERVER_SETTINGS } from '../test/support/db.ts';
import { isAlive } from '../test/support/process.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNNER_STOP_MS = 30_000;
const TEST_TIMEOUT_MS = 10 * 60_000;
const RUN_MARKER = 'VIDTRACK_TEST_RUN';

function findTestFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules') found.push(...findTestFiles(full));
    else if (entry.isFile() && entry.name.endsWith('.test.ts')) found.push(path.relative(root, full));
  }
  return found.sort();
}

const extra = process.argv.slice(2);
const named = extra.filter((arg) => !arg.startsWith('-') && arg.endsWith('.ts'));
const flags = extra.filter((arg) => !named.includes(arg));
const files = named.length > 0 ? named : findTestFiles(path.join(root, 'test'));
// TAP keeps the "# pass N" / "# fail N" summary lines, on a terminal too.
if (!flags.some((flag) => flag.startsWith('--test-reporter'))) flags.push('--test-reporter=tap');
if (!flags.some((flag) => flag.startsWith('--test-timeout'))) flags.push(`--test-timeout=${TEST_TIMEOUT_MS}`);

// The run's folder: the shared server's cluster, and the temp folder of everything the tests
// start. As root, PostgreSQL runs as the `postgres` user, which must be able to enter it.
const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-test-'));
fs.chmodSync(runDir, 0o711);
const tmpDir = path.join(runDir, 'tmp');
fs.mkdirSync(tmpDir, { mode: 0o711 });
fs.chmodSync(tmpDir, 0o711);

let code = 1;
try {
  const server = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'server'), detached: false, settings: TEST_SERVER_SETTINGS });
  try {
    code = await runNodeTests(files, flags, server.adminUrl);
  } finally {
    await server.stop();
  }
} finally {
  const leftovers = await killLeftovers(runDir);
  if (leftovers.length > 0) {
    console.error(`# the tests left ${leftovers.length} process(es) running; killed now:\n${leftovers.map((p) => `#   pid ${p.pid}: ${p.command}`).join('\n')}`);
    if (code === 0) code = 1;
  }
  fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(code);

function runNodeTests(testFiles: string[], nodeFlags: string[], adminUrl: string): Promise<number> {
  // A process group of its own: a signal or a kill reaches the runner, its test files and
  // whatever they started that stayed in the group, and nothing else.
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', ...nodeFlags, ...testFiles], {
    cwd: root,
    stdio: 'inherit',
    detached: true,
    env: { ...process.env, TEST_DATABASE_URL: adminUrl, TMPDIR: tmpDir, [RUN_MARKER]: runDir },
  });
  let escalation: NodeJS.Timeout | undefined;
  const forward = (signal: NodeJS.Signals) => {
    console.error(`# ${signal}: stopping the test run (killed after ${RUNNER_STOP_MS / 1000} s)`);
    signalGroup(child, signal);
    escalation ??= setTimeout(() => {
      console.error(`# the test runner did not stop within ${RUNNER_STOP_MS / 1000} s of ${signal}: killing it`);
      signalGroup(child, 'SIGKILL');
    }, RUNNER_STOP_MS);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  process.on('SIGHUP', forward);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(error);
      resolve(1);
    });
    child.once('exit', (exitCode, signal) => {
      clearTimeout(escalation);
      // Whatever of the runner's group is still alive (a test file it gave up on) goes now.
      signalGroup(child, 'SIGKILL');
      process.off('SIGINT', forward);
      process.off('SIGTERM', forward);
      process.off('SIGHUP', forward);
      resolve(exitCode ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1));
    });
  });
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone
  }
}

/**
 * Processes that belong to this run (its marker in their environment, or its folder on their
 * command line: a PostgreSQL's -D) and are still alive: SIGKILLed, waited for, and returned.
 * Linux only (/proc); elsewhere the harness's own cleanup is all there is.
 */
async function killLeftovers(dir: string): Promise<Array<{ pid: number; command: string }>> {
  if (!fs.existsSync('/proc/self')) return [];
  const marker = `${RUN_MARKER}=${dir}\0`;
  const found: Array<{ pid: number; command: string }> = [];
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))) continue; // a zombie is already dead
      if (environ.includes(marker) || command.includes(dir)) found.push({ pid, command });
    } catch {
      // exited meanwhile, or not ours to read
    }
  }
  for (const { pid } of found) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
  const deadline = Date.now() + 10_000;
  while (found.some(({ pid }) => isAlive(pid)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const p of found.filter(({ pid }) => isAlive(pid))) console.error(`# pid ${p.pid} survived SIGKILL for 10 s: ${p.command}`);
  return found;
}

