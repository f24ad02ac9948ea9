// The audit's command line as an operator meets it (its figures: test/audit/audit.test.ts):
// --help, a wrong command line, and a database it cannot reach each answer in a line or two,
// never a stack trace, with the admin CLI's exit codes (0 help, 2 usage, 1 anything else).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');
/** Nothing listens on port 1: a database the tool cannot reach. */
const UNREACHABLE = 'postgres://nobody:nothing@127.0.0.1:1/nothing';

function audit(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'scripts/audit.ts', ...args], { cwd: root, env: { ...process.env, DATABASE_URL: UNREACHABLE }, timeout: 30_000, killSignal: 'SIGKILL' }, (error, stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

test('--help prints the usage on stdout and exits 0; a wrong command line says why with the usage and exits 2', async () => {
  const help = await audit('--help');
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: audit /);
  for (const args of [[], ['--org'], ['--all', 'extra'], ['--all', '--at', 'yesterday']]) {
    const run = await audit(...args);
    assert.equal(run.code, 2, `audit ${args.join(' ')}: exit ${run.code}: ${run.stderr}`);
    assert.match(run.stderr, /^error: .*\nusage: audit /, `audit ${args.join(' ')}`);
  }
});

test('--at takes an ISO 8601 date or date-time with its zone, and nothing else Date would parse', async () => {
  // "Dec 6" was 2001-12-06 and "5" 2001-05-01; a time without a zone is this machine's.
  for (const time of ['Dec 6', '5', '2026-12-06T12:00:00', '2026-12-06 12:00:00Z', '2026-02-30', '2026-12-06T25:00Z']) {
    const run = await audit('--all', '--at', time);
    assert.equal(run.code, 2, `--at ${time}: exit ${run.code}: ${run.stderr}`);
    assert.match(run.stderr, /^error: --at must be an ISO 8601 date .* or date-time with its zone .*\nusage: audit /, `--at ${time}`);
  }
  // Accepted, these go on to the database (which is not there: exit 1).
  for (const time of ['2026-12-06', '2026-12-06T12:00:00.5Z', '2026-12-06T13:00+01:00']) {
    const run = await audit('--all', '--at', time);
    assert.equal(run.code, 1, `--at ${time}: exit ${run.code}: ${run.stderr}`);
    assert.match(run.stderr, /^error: .*ECONNREFUSED/, `--at ${time}`);
  }
});

test('a database the audit cannot reach is one line on stderr and exit 1, not a stack trace', async () => {
  const run = await audit('--all');
  assert.equal(run.code, 1, `exit ${run.code}: ${run.stderr}`);
  assert.match(run.stderr, /^error: .*ECONNREFUSED/);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'a message, not a stack trace');
});
