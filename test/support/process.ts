// The service as real processes: `src/main.ts` in its own data folder, the admin CLI and the
// audit beside it, and fetch against its API. For tests that start, kill and restart it.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const root = path.resolve(import.meta.dirname, '../..');

export interface ServiceProcess {
  dataDir: string;
  base: string;
  env: NodeJS.ProcessEnv;
  start(): Promise<void>;
  /** SIGTERM and wait, or SIGKILL (a crash: nothing is flushed or closed). */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  admin(...args: string[]): Promise<Record<string, unknown>>;
  run(script: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  api(method: string, url: string, key: string, body?: unknown): Promise<{ status: number; body: any }>;
  cleanup(): Promise<void>;
}

export function serviceProcess(extraEnv: NodeJS.ProcessEnv = {}): ServiceProcess {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-proc-'));
  const port = 38000 + Math.floor(Math.random() * 2000);
  const base = `http://127.0.0.1:${port}`;
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  // A role without the API answers /health on its metrics port: the same number here.
  const env: NodeJS.ProcessEnv = { ...inherited, DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: String(port), LOG_LEVEL: 'warn', ...extraEnv };
  let child: ChildProcess | null = null;

  const run = (script: string, ...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, env }, (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }),
      );
    });

  return {
    dataDir,
    base,
    env,
    async start() {
      child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] });
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) return;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error('service did not become healthy');
    },
    async stop(signal = 'SIGTERM') {
      if (!child) return;
      const exited = new Promise((resolve) => child!.once('exit', resolve));
      child.kill(signal);
      await exited;
      child = null;
    },
    async admin(...args) {
      const result = await run('scripts/admin.ts', ...args);
      if (result.code !== 0) throw new Error(`admin ${args.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout);
    },
    run,
    async api(method, url, key, body) {
      const response = await fetch(`${base}/api/v1${url}`, {
        method,
        headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    async cleanup() {
      await this.stop();
      // The embedded server outlives a killed service (its own process group): stop it too.
      const info = path.join(dataDir, 'postgres.json');
      if (fs.existsSync(info)) {
        const { pid } = JSON.parse(fs.readFileSync(info, 'utf8')) as { pid?: number };
        if (pid) {
          try {
            process.kill(pid, 'SIGINT');
            for (let i = 0; i < 100 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
          } catch {
            // already gone
          }
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
