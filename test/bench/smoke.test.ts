// `npm run bench -- --smoke` runs every benchmark on tiny sizes, so the benchmarks cannot
// rot. Only that they run and report is checked here: speed is the benchmarks' business.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(import.meta.dirname, '../..');

/**
 * Beyond five minutes on a 2-core machine shared with other work (the idle benchmark alone
 * measures for over a minute): a deadline under the test runner's own ten minutes, named when
 * it is what ended the run.
 */
const SMOKE_DEADLINE_MS = 540_000;

test('every benchmark runs on tiny sizes and reports its figures against their limits', async () => {
  const { DATABASE_URL: _ignored, BENCH_VIDEOS: _alsoIgnored, ...env } = process.env;
  const { code, stdout, stderr, killed } = await new Promise<{ code: number; stdout: string; stderr: string; killed: boolean }>((resolve) => {
    const child = execFile(process.execPath, ['--import', 'tsx', 'scripts/bench/index.ts', '--smoke'], { cwd: root, env, timeout: SMOKE_DEADLINE_MS }, (error, out, err) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout: out, stderr: err, killed: child.killed }),
    );
  });
  assert.ok(!killed, `npm run bench -- --smoke did not finish within ${SMOKE_DEADLINE_MS / 1000} s; its output so far:\n${stdout}${stderr}`);
  assert.equal(code, 0, stderr + stdout);
  assert.match(stdout, /^machine: .+cores/m);
  assert.match(stdout, /^node v\d+.*database: /m);
  assert.match(stdout, /\| figure +\| value +\| limit +\| ratio +\| target +\| met/);
  for (const figure of ['snapshots collected end to end', 'read-model rebuild', 'scheduler process holding', 'GET /videos/', 'GET /videos?limit=100', 'GET /usage', 'POST /videos/track', 'idle CPU of npm start', 'key counters on', 'video page with', 'JavaScript shipped per page', 'event store: 8 writers', 'one transaction per append', 'appendMany', 'the whole log read in order', 'catch-up subscriber projecting one table']) {
    assert.ok(stdout.includes(figure), `the table has a row for ${figure}`);
  }
});
