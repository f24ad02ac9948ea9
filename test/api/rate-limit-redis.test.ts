// Rate limits across API replicas (DESIGN §8): with REDIS_URL every replica counts a key's
// requests in one Redis, so two replicas do not give a key twice its limit. Runs against a
// real redis-server (Debian's package; .ci/run installs it), on a Unix socket of its own.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/api/app.ts';
import { issueKey } from '../../src/commands/account-commands.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { within } from '../support/wait.ts';

const installed = spawnSync('redis-server', ['--version']).status === 0;
const LIMIT = 10;

describe('rate limits shared through Redis', { skip: installed ? false : 'redis-server is not installed here (Debian package redis-server)' }, () => {
  let service: TestService;
  let redis: ChildProcess;
  let dir: string;
  let socket: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-redis-'));
    socket = path.join(dir, 'redis.sock');
    redis = spawn('redis-server', ['--port', '0', '--unixsocket', socket, '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('redis-server did not say it is ready to accept connections within 10 s')), 10_000);
      let seen = '';
      redis.stdout!.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (/ready to accept connections/i.test(seen)) {
          clearTimeout(timer);
          resolve();
        }
      });
      redis.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${seen}`)));
    });
    service = await startTestService();
  });

  after(async () => {
    await service?.close();
    if (redis && redis.exitCode === null) {
      const exited = new Promise((resolve) => redis.once('exit', resolve));
      redis.kill('SIGTERM');
      // A redis-server that does not stop within 10 s is killed: a test never leaves one behind.
      await within('redis-server to exit on SIGTERM', exited, 10_000).catch(async () => {
        redis.kill('SIGKILL');
        await exited;
      });
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A second API process beside the service's: the same database, its own memory. */
  async function replica(redisUrl: string | null) {
    const { db, store, collectors, clock, watcher } = service;
    return buildApp({ pool: db.pool, store, collectors, clock, watcher, isReady: () => true, redisUrl });
  }

  /** Alternates GET /usage between the replicas until the first 429; answers how many passed. */
  async function passedBefore429(replicas: Awaited<ReturnType<typeof replica>>[], apiKey: string): Promise<number> {
    for (let i = 0; i < LIMIT * replicas.length + 1; i++) {
      const response = await replicas[i % replicas.length]!.inject({ method: 'GET', url: '/api/v1/usage', headers: { 'x-api-key': apiKey } });
      if (response.statusCode === 429) return i;
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(Number(response.headers['x-ratelimit-remaining']), LIMIT - 1 - i, `request ${i}: remaining counts both replicas`);
    }
    return LIMIT * replicas.length + 1;
  }

  it(`two replicas give a key of ${LIMIT}/min exactly ${LIMIT} requests in all`, async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: LIMIT });
    const replicas = [await replica(socket), await replica(socket)];
    try {
      assert.equal(await passedBefore429(replicas, org.liveKey), LIMIT);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });

  it('without Redis each replica counts alone (what REDIS_URL is for)', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: LIMIT });
    const { apiKey } = await issueKey(service.store, service.clock, { orgId: org.orgId, name: 'alone', mode: 'live' });
    await service.settle();
    const a = await replica(null);
    const b = await replica(null);
    try {
      const passedA = [];
      for (let i = 0; i < LIMIT; i++) passedA.push((await a.inject({ method: 'GET', url: '/api/v1/usage', headers: { 'x-api-key': apiKey } })).statusCode);
      const onB = await b.inject({ method: 'GET', url: '/api/v1/usage', headers: { 'x-api-key': apiKey } });
      assert.deepEqual(passedA, Array(LIMIT).fill(200));
      assert.equal(onB.statusCode, 200, 'the other replica has counted nothing');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a Redis that stops answering does not stop the API (requests go on, unlimited, meanwhile)', async () => {
    const org = await service.organization({ plan: 'enterprise', rateLimit: LIMIT });
    const dead = path.join(dir, 'nobody-listens.sock');
    const app = await replica(dead);
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/usage', headers: { 'x-api-key': org.liveKey } });
      assert.equal(response.statusCode, 200, response.body);
    } finally {
      await app.close();
    }
  });
});
