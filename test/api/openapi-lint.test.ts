// The OpenAPI document the service serves passes both linters with no error and no warning:
// `redocly lint` with its recommended rules (redocly.yaml) and `spectral lint` with spectral:oas
// (.spectral.yaml), run as their CLIs, offline, on the document fetched from a running app.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startTestService, type TestService } from '../support/service.ts';
import { API } from './helpers.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LINT_DEADLINE_MS = 120_000;
// Nothing leaves the machine: no telemetry, no update check.
const OFFLINE = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_UPDATE_NOTIFIER: '1', SCARF_ANALYTICS: 'false' };

let service: TestService;
let folder: string;
let served: Record<string, any>;
before(async () => {
  service = await startTestService();
  const address = await service.app.listen({ port: 0, host: '127.0.0.1' });
  const response = await fetch(`${address}${API}/openapi.json`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(response.status, 200);
  served = (await response.json()) as Record<string, any>;
  folder = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
});
after(async () => {
  await service?.close();
  if (folder) fs.rmSync(folder, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a linter's CLI from the project's root (where its configuration is); fails past the deadline. */
function run(bin: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(path.join(root, 'node_modules/.bin', bin), args, { cwd: root, env: OFFLINE, timeout: LINT_DEADLINE_MS, maxBuffer: 16 * 2 ** 20 }, (error, stdout, stderr) => {
      if (error && (error.killed || typeof error.code !== 'number')) {
        return reject(new Error(`${bin} did not finish within ${LINT_DEADLINE_MS} ms (${error.message}): ${stderr}`));
      }
      resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
    });
  });
}

function write(name: string, document: object): string {
  const file = path.join(folder, name);
  fs.writeFileSync(file, JSON.stringify(document, null, 2));
  return file;
}

interface Findings {
  errors: number;
  warnings: number;
  /** One line per problem, for the failure message. */
  report: string;
}

async function redocly(file: string): Promise<Findings> {
  const result = await run('redocly', ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format=json']);
  let parsed: { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; severity: string; message: string; location?: Array<{ pointer?: string }> }> };
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    throw new Error(`redocly gave no JSON report (exit ${result.code}): ${result.stdout}\n${result.stderr}`);
  }
  const report = parsed.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.pointer ?? ''}: ${p.message}`).join('\n');
  return { errors: parsed.totals.errors, warnings: parsed.totals.warnings, report };
}

async function spectral(file: string): Promise<Findings> {
  const result = await run('spectral', ['lint', file, '--ruleset', path.join(root, '.spectral.yaml'), '--format', 'json', '--quiet']);
  let parsed: Array<{ code: string; severity: number; message: string; path: string[] }>;
  try {
    parsed = JSON.parse(result.stdout);
  } catch {
    throw new Error(`spectral gave no JSON report (exit ${result.code}): ${result.stdout}\n${result.stderr}`);
  }
  // Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
  const report = parsed.map((p) => `${['error', 'warning', 'info', 'hint'][p.severity]} ${p.code} ${p.path.join('.')}: ${p.message}`).join('\n');
  return { errors: parsed.filter((p) => p.severity === 0).length, warnings: parsed.filter((p) => p.severity === 1).length, report };
}

describe('the served OpenAPI document', () => {
  test('redocly lint (recommended): 0 errors, 0 warnings', async () => {
    const found = await redocly(write('openapi.json', served));
    assert.deepEqual({ errors: found.errors, warnings: found.warnings }, { errors: 0, warnings: 0 }, found.report);
  });

  test('spectral lint (spectral:oas): 0 errors, 0 warnings', async () => {
    const found = await spectral(write('openapi.json', served));
    assert.deepEqual({ errors: found.errors, warnings: found.warnings }, { errors: 0, warnings: 0 }, found.report);
  });
});

// The linters and their configuration do find what is missing: without this, a linter that
// checked nothing (a wrong config path, an empty ruleset) would pass the tests above.
describe('the linters see a document that lacks what the reference needs', () => {
  const lacking = () => {
    const document = structuredClone(served);
    const list = document.paths['/videos'].get;
    delete list.summary;
    delete list.operationId;
    delete list.tags;
    delete list.description;
    delete document.info.license;
    delete document.info.contact;
    return document;
  };

  test('redocly', async () => {
    const found = await redocly(write('lacking.json', lacking()));
    assert.ok(found.errors > 0 && found.warnings > 0, found.report);
    for (const rule of ['operation-summary', 'operation-operationId', 'info-license']) assert.match(found.report, new RegExp(rule));
  });

  test('spectral', async () => {
    const found = await spectral(write('lacking.json', lacking()));
    assert.ok(found.warnings > 0, found.report);
    for (const rule of ['operation-operationId', 'operation-tags', 'operation-description', 'info-contact']) assert.match(found.report, new RegExp(rule));
  });
});
