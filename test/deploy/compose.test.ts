// docker-compose.yml: valid for Compose (checked by the docker-compose binary when there is
// one; no engine is needed for `config`), and every variable it gives the roles is one the
// service reads and the README documents. Read as text, not YAML (no YAML parser here): the
// file keeps the roles' variables in one `environment:` map of `NAME: value` lines.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const composeFile = path.join(root, 'docker-compose.yml');
const compose = fs.readFileSync(composeFile, 'utf8');
const ROLES = ['api', 'projector', 'scheduler'];

/** `docker-compose`, or else the `docker compose` plugin, if either runs here. */
function composeCommand(): string[] | null {
  if (spawnSync('docker-compose', ['version'], { stdio: 'ignore', timeout: 10_000 }).status === 0) return ['docker-compose'];
  if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore', timeout: 10_000 }).status === 0) return ['docker', 'compose'];
  return null;
}

const command = composeCommand();

test('compose: `docker-compose config -q` accepts docker-compose.yml', { skip: command ? false : 'neither docker-compose nor the docker compose plugin is installed' }, () => {
  const [bin, ...pre] = command!;
  // Credentials unset (pass-through): the file must be valid without them.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(YOUTUBE|X_|TIKTOK|INSTAGRAM)/.test(name)));
  // The one variable compose requires (below).
  env.WEBHOOK_KEY = 'a-key-for-the-check';
  const result = spawnSync(bin!, [...pre, '-f', composeFile, 'config', '-q'], { cwd: root, encoding: 'utf8', env, timeout: 60_000 });
  assert.equal(result.status, 0, `${command!.join(' ')} config -q failed:\n${result.stderr}${result.stdout}`);
});

/** Top-level keys, and for each service (two-space indent under services:) its block of lines. */
function blocks(text: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  let top = '';
  let current: string[] | undefined;
  for (const line of text.split('\n')) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const topKey = /^([A-Za-z][\w-]*):/.exec(line);
    if (topKey) {
      top = topKey[1]!;
      current = top.startsWith('x-') ? [] : undefined;
      if (current) found.set(top, current);
      continue;
    }
    const service = /^ {2}([A-Za-z][\w-]*):\s*$/.exec(line);
    if (top === 'services' && service) {
      current = [];
      found.set(service[1]!, current);
      continue;
    }
    current?.push(line);
  }
  return found;
}

/** The NAME: keys of a block's `environment:` map (or of the block itself, for an x- map of variables). */
function environmentNames(lines: readonly string[], wholeBlock: boolean): string[] {
  const names: string[] = [];
  let inside = wholeBlock;
  let indent = -1;
  for (const line of lines) {
    const depth = line.length - line.trimStart().length;
    if (!wholeBlock && /^\s+environment:\s*$/.test(line)) {
      inside = true;
      indent = depth;
      continue;
    }
    if (!wholeBlock && inside && depth <= indent) inside = false;
    const entry = /^\s+([A-Z][A-Z0-9_]*):/.exec(line);
    if (inside && entry) names.push(entry[1]!);
  }
  return names;
}

const parsed = blocks(compose);
const roleEnvironment = environmentNames(parsed.get('x-vidtrack-environment') ?? [], true);
const perRole = new Map(ROLES.map((role) => [role, environmentNames(parsed.get(role) ?? [], false)]));

/** Every variable src/config.ts or the collectors read. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const config = fs.readFileSync(path.join(root, 'src/config.ts'), 'utf8');
  for (const [, name] of config.matchAll(/env\.([A-Z][A-Z0-9_]*)/g)) read.add(name!);
  const collectors = fs.readFileSync(path.join(root, 'src/collect/collectors/from-env.ts'), 'utf8');
  for (const [, name] of collectors.matchAll(/'([A-Z][A-Z0-9_]+)'/g)) read.add(name!);
  return read;
}

test('compose: the roles are services built from the repo, each with its ROLE, after healthy stores', () => {
  assert.ok(roleEnvironment.length > 0, 'x-vidtrack-environment lists the roles\' variables');
  for (const role of ROLES) {
    assert.ok(parsed.has(role), `service ${role}`);
    assert.deepEqual(perRole.get(role), ['ROLE'], `${role} sets ROLE on top of the shared variables`);
    assert.match(parsed.get(role)!.join('\n'), new RegExp(`ROLE: ${role}\\b`));
    assert.match(parsed.get(role)!.join('\n'), /<<: \*vidtrack\b/);
  }
  const shared = parsed.get('x-vidtrack')!.join('\n');
  assert.match(shared, /build: \./);
  for (const store of ['eventstoredb', 'postgres']) assert.match(shared, new RegExp(`${store}:\\s+condition: service_healthy`));
  for (const service of ['eventstoredb', 'postgres', 'mailpit']) assert.match(parsed.get(service)!.join('\n'), /healthcheck:/, `${service} has a healthcheck`);
  assert.ok(!/container_name:/.test(parsed.get('scheduler')!.join('\n')), 'the scheduler can be scaled');
  assert.match(parsed.get('api')!.join('\n'), /"3000:3000"/);
  assert.match(parsed.get('mailpit')!.join('\n'), /"8025:8025"/);
  for (const [name, value] of [['EVENT_STORE', 'eventstoredb'], ['EVENTSTORE_URL', 'esdb://eventstoredb:2113'], ['SMTP_URL', 'smtp://mailpit:1025'], ['DATABASE_URL', '@postgres:5432/']]) {
    assert.match(parsed.get('x-vidtrack-environment')!.join('\n'), new RegExp(`${name}: .*${value.replace(/[.?]/g, '\\$&')}`));
  }
});

test('compose: every variable given to the roles is one the service reads, and the README documents it', () => {
  const read = variablesRead();
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  for (const name of [...roleEnvironment, 'ROLE']) {
    assert.ok(read.has(name), `${name} is set by docker-compose.yml but read by neither src/config.ts nor the collectors`);
    assert.ok(readme.includes(`\`${name}\``), `${name} is not documented in README.md`);
  }
  for (const name of ['DATABASE_URL', 'EVENT_STORE', 'EVENTSTORE_URL', 'SMTP_URL', 'MAIL_FROM', 'PORT', 'COLLECTOR_FALLBACK']) {
    assert.ok(roleEnvironment.includes(name), `docker-compose.yml gives the roles ${name}`);
  }
});

test('compose: every variable of the README\'s configuration table reaches the roles, but those a container sets itself; WEBHOOK_KEY is required', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const table = readme.split('\n').filter((line) => /^\| `[A-Z]/.test(line)).map((line) => line.split('|')[1]!);
  const documented = new Set(table.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!)));
  // Set by the image or the service per container (ROLE, DATA_DIR), fakes' addresses for tests,
  // and the benchmarks' own.
  const notForContainers = /^(ROLE|DATA_DIR|BENCH_.*|.*_API_URL|TIKTOK_SHORT_LINK_URL)$/;
  const missing = [...documented].filter((name) => !notForContainers.test(name) && !roleEnvironment.includes(name));
  assert.deepEqual(missing, [], 'documented in the configuration table but not passed to the containers');
  assert.match(parsed.get('x-vidtrack-environment')!.join('\n'), /WEBHOOK_KEY: \$\{WEBHOOK_KEY:\?/, 'compose refuses to start without WEBHOOK_KEY');
});
