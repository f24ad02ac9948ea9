// Settings from the environment (src/config.ts): a value the service cannot run on is refused at
// start with its name, rather than taken and failing later, or for good.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MAX_TIME_SCALE, loadConfig } from '../../src/config.ts';

test('config: numbers are written as numbers, within what the service can run on', () => {
  assert.equal(loadConfig({ TIME_SCALE: '3600' }, []).timeScale, 3600);
  assert.equal(loadConfig({ TIME_SCALE: '0.5' }, []).timeScale, 0.5);
  assert.equal(loadConfig({ TIME_SCALE: String(MAX_TIME_SCALE) }, []).timeScale, MAX_TIME_SCALE);
  // 1e300 took the stored clock past what a date holds: every later start failed.
  for (const bad of ['1e300', String(MAX_TIME_SCALE + 1), '0x10', '0', '-1', 'NaN', 'Infinity', ' 5']) {
    assert.throws(() => loadConfig({ TIME_SCALE: bad }, []), /TIME_SCALE must be a positive number up to 100000/, bad);
  }
  assert.equal(loadConfig({ PORT: '0' }, []).port, 0);
  for (const bad of ['3e3', '80.0', '65536', '-1', '0x50']) assert.throws(() => loadConfig({ PORT: bad }, []), /PORT must be a port number/, bad);
  assert.equal(loadConfig({ AUTH_FAILURE_RATE_LIMIT: '20' }, []).failedAuthLimit, 20);
  for (const bad of ['0.5', '0', '1e2']) assert.throws(() => loadConfig({ AUTH_FAILURE_RATE_LIMIT: bad }, []), /AUTH_FAILURE_RATE_LIMIT must be a whole number from 1/, bad);
  assert.equal(loadConfig({ LOG_LEVEL: 'debug' }, []).logLevel, 'debug');
  assert.equal(loadConfig({}, []).logLevel, 'info');
  // pino threw its own stack for this, before any log existed.
  assert.throws(() => loadConfig({ LOG_LEVEL: 'verbose' }, []), /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/);
});

test('config: TRUST_PROXY is true or the proxies\' addresses and ranges; unset, no proxy is trusted', () => {
  assert.equal(loadConfig({}, []).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'false' }, []).trustProxy, false);
  assert.equal(loadConfig({ TRUST_PROXY: 'true' }, []).trustProxy, true);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.2' }, []).trustProxy, ['10.0.0.2']);
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, fd00::/8,loopback' }, []).trustProxy, ['10.0.0.0/8', 'fd00::/8', 'loopback']);
  // Fastify trusts no peer on a hop count alone: taking one would trust nothing, silently.
  assert.throws(() => loadConfig({ TRUST_PROXY: '1' }, []), /TRUST_PROXY does not take a hop count/);
  for (const bad of ['yes', 'TRUE', 'proxy.example.test', '10.0.0.0/33', '10.0.0.2,', '10.0.0.0/8/8', '::1/129']) {
    assert.throws(() => loadConfig({ TRUST_PROXY: bad }, []), /TRUST_PROXY must be true, or the proxies' addresses and CIDR ranges/, bad);
  }
});

test('npm start with a setting it cannot run on says which, in one line, and exits 2 before starting anything', () => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, TIME_SCALE: '1e300', DATA_DIR: path.join(os.tmpdir(), 'vidtrack-never-made') },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 2, run.stderr);
  assert.equal(run.stderr, 'error: TIME_SCALE must be a positive number up to 100000, got "1e300"\n');
  assert.equal(fs.existsSync(path.join(os.tmpdir(), 'vidtrack-never-made')), false);
});
