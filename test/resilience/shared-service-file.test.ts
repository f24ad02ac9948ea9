// Roles as separate processes on one DATA_DIR, as the README's production topology runs them
// (`npm run start:api` beside `npm run start:projector`): they share `service.json`. It must go
// on naming the running API, whichever role starts after it or stops before it; a role used to
// replace the API's entry with its own and remove the file when it stopped.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SERVICE_FILE, type ServiceFile } from '../../src/service-file.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { root } from '../support/process.ts';
import { until, within } from '../support/wait.ts';

const STOP_MS = 15_000;

interface Role {
  child: ChildProcess;
  exit: Promise<unknown>;
  /** Its log lines so far (pino, one JSON object a line). */
  log: string[];
}

let db: TestDatabase | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-shared-'));
const file = path.join(dataDir, SERVICE_FILE);
const roles: Role[] = [];

after(async () => {
  for (const role of roles) await stop(role).catch(() => role.child.kill('SIGKILL'));
  await db?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function start(name: 'api' | 'projector'): Role {
  const env = { ...process.env, DATABASE_URL: db!.url, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info' };
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', name], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const role: Role = { child, exit: new Promise((resolve) => child.once('exit', resolve)), log: [] };
  let partial = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    role.log.push(...lines);
  });
  roles.push(role);
  return role;
}

async function stop(role: Role): Promise<void> {
  if (role.child.exitCode !== null || role.child.signalCode !== null) return;
  role.child.kill('SIGTERM');
  await within(`pid ${role.child.pid} to exit after SIGTERM`, role.exit, STOP_MS);
}

function read(): ServiceFile | null {
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as ServiceFile) : null;
}

const writtenBy = (role: Role) => until(`${file} written by pid ${role.child.pid}`, () => (read()?.pid === role.child.pid ? read()! : undefined), 120_000);

/** A role without the API is ready once its /health (on its metrics port, named in its log) answers 200. */
async function ready(role: Role): Promise<void> {
  const url = await until(`pid ${role.child.pid} to log its metrics URL`, () => role.log.map((l) => /metrics and health at (\S+)"/.exec(l)?.[1]).find(Boolean), 120_000);
  await until(`${url}/health to answer 200`, async () => ((await fetch(`${url}/health`, { signal: AbortSignal.timeout(5_000) })).ok ? true : undefined), 60_000, 100);
}

test('service.json keeps naming the running API when projectors beside it on the DATA_DIR start after it and stop', async () => {
  db = await createTestDatabase();
  // Alone on the folder, a projector names itself (its metrics port).
  const first = start('projector');
  const own = await writtenBy(first);
  assert.equal(own.api, null);
  assert.match(own.metrics ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);

  // The API's entry replaces it: the API is what readers look for.
  const api = start('api');
  const apiInfo = await writtenBy(api);
  assert.match(apiInfo.api ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);

  // A projector that starts after the API leaves its entry alone.
  const second = start('projector');
  await ready(second);
  assert.deepEqual(read(), apiInfo, 'a projector started after the API replaced its entry');

  // Projectors that stop remove nothing of the API's, neither the one that wrote the file first nor the other.
  await stop(first);
  assert.deepEqual(read(), apiInfo, 'the first projector, stopping, removed or changed the API\'s entry');
  await stop(second);
  assert.deepEqual(read(), apiInfo, 'the second projector, stopping, removed or changed the API\'s entry');
  assert.ok((await fetch(`${apiInfo.api}/health`, { signal: AbortSignal.timeout(5_000) })).ok, 'the API the file names answers');

  // The API stopping removes its own entry.
  await stop(api);
  assert.equal(read(), null);
});
