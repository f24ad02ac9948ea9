// `npm test`: one throwaway PostgreSQL for the whole run (each test file makes
// its own databases on it through test/support/db.ts), every test/**/*.test.ts
// file found here rather than by a shell glob (sh's `**` is not recursive), and
// the exit code of node's test runner.
//
//   npm test                                    all files
//   npm test -- test/eventstore/postgres.test.ts   only these files
//   npm test -- --test-name-pattern=subscribe   extra flags go to node --test
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/db/embedded.ts';
import { TEST_SERVER_SETTINGS } from '../test/support/db.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

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

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-test-'));
let code = 1;
try {
  const server = await startEmbeddedPostgres({ dataDir, detached: false, settings: TEST_SERVER_SETTINGS });
  try {
    code = await runNodeTests(files, flags, server.adminUrl);
  } finally {
    await server.stop();
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
process.exit(code);

function runNodeTests(testFiles: string[], nodeFlags: string[], adminUrl: string): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', ...nodeFlags, ...testFiles], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, TEST_DATABASE_URL: adminUrl },
  });
  // A Ctrl-C reaches the whole process group: let node's runner wind down and
  // report, then clean up here. A SIGTERM aimed at us alone is passed on.
  const ignore = () => {};
  const forward = () => child.kill('SIGTERM');
  process.on('SIGINT', ignore);
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(error);
      resolve(1);
    });
    child.once('exit', (exitCode, signal) => {
      process.off('SIGINT', ignore);
      process.off('SIGTERM', forward);
      resolve(exitCode ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1));
    });
  });
}
