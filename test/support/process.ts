// The service as real processes: `src/main.ts` in its own data folder, the admin CLI and the
// audit beside it, and fetch against its API. For tests that start, kill and restart it.
//
// Determinism rules this harness enforces (issue 9, item 8):
// - The service listens on port 0 and says where in `${DATA_DIR}/service.json`
//   (src/service-file.ts); nothing here picks a port, so nothing can collide.
// - Every wait has a deadline and names what it waited for.
// - The service runs in a process group of its own, so a stop that runs out of time can kill
//   it and everything it started; its embedded PostgreSQL (its own group, by design: see
//   src/db/embedded.ts) is found through the cluster's postmaster.pid and stopped by cleanup(),
//   and by this module's exit hooks when the test process dies before cleanup() runs.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { SERVICE_FILE, type ServiceFile } from '../../src/service-file.ts';
import { until, WaitTimeout, within } from './wait.ts';

export { until } from './wait.ts';

export const root = path.resolve(import.meta.dirname, '../..');

/** Startup includes initdb on a fresh folder and the migrations: slow on a busy 2-core machine. */
const START_TIMEOUT_MS = 120_000;
/** Longer than the 10 s the issue gives a SIGTERM, so a failure here is the service's, not the machine's. */
const STOP_TIMEOUT_MS = 15_000;
const CLI_TIMEOUT_MS = 120_000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface ServiceProcess {
  readonly dataDir: string;
  /** The API's base URL (http://127.0.0.1:<port>), known once start() returned. */
  readonly base: string;
  /** Where /health and /metrics are served (the API's URL, or a non-API role's metrics port). */
  readonly healthBase: string;
  /** The pid of the running service, or null. */
  readonly pid: number | null;
  /** How the last started process ended ("code 0", "signal SIGKILL"), or null while it runs or before any start. */
  readonly exitStatus: string | null;
  /** Whether it runs, and the end of its log and stderr: for a failure message. */
  lastOutput(): string;
  readonly env: NodeJS.ProcessEnv;
  start(): Promise<void>;
  /**
   * SIGTERM: a clean stop, which must end the process (and its embedded PostgreSQL) within
   * 15 s, or the process group is killed and this rejects. SIGKILL: a crash of the whole
   * process group, nothing flushed or closed (the embedded PostgreSQL, in a group of its own,
   * stays up as it would in production).
   */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  admin(...args: string[]): Promise<Record<string, unknown>>;
  run(script: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  api(method: string, url: string, key: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Stops the service and any PostgreSQL left on its data folder, then removes the folder. */
  cleanup(): Promise<void>;
}

export function serviceProcess(extraEnv: NodeJS.ProcessEnv = {}): ServiceProcess {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-proc-'));
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  // Port 0: the OS hands out free ports; service.json reports them. METRICS_PORT only matters
  // for a role without the API (which then serves /health there).
  const env: NodeJS.ProcessEnv = { ...inherited, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn', ...extraEnv };
  let child: Running | null = null;
  let exitStatus: string | null = null;
  let urls: ServiceFile | null = null;
  dataDirs.add(dataDir);

  const run = (script: string, ...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', script, ...args],
        { cwd: root, env, timeout: CLI_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const timedOut = error && (error as { killed?: boolean }).killed ? `\n[harness] ${script} killed after ${CLI_TIMEOUT_MS} ms` : '';
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr: stderr + timedOut });
        },
      );
    });

  const service: ServiceProcess = {
    dataDir,
    env,
    get base() {
      if (!urls?.api) throw new Error(`no API URL: the service in ${dataDir} is not started, or its role has no API`);
      return urls.api;
    },
    get healthBase() {
      const url = urls?.api ?? urls?.metrics;
      if (!url) throw new Error(`no /health URL: the service in ${dataDir} is not started, or has neither API nor METRICS_PORT`);
      return url;
    },
    get pid() {
      return child && !child.exited ? child.process.pid! : null;
    },
    get exitStatus() {
      return exitStatus;
    },
    lastOutput() {
      if (!child) return 'the service was never started';
      const state = child.exited ? `exited (${exitStatus ?? 'status not yet known'})` : `runs as pid ${child.process.pid}`;
      return `the service ${state}; ${child.logTail()}\n${child.stderrTail()}`;
    },
    async start() {
      if (child && !child.exited) throw new Error(`the service in ${dataDir} already runs (pid ${child.process.pid})`);
      // A service killed with -9 leaves its file behind: only the new process's counts.
      fs.rmSync(path.join(dataDir, SERVICE_FILE), { force: true });
      urls = null;
      const started = startChild(env);
      child = started;
      exitStatus = null;
      void started.exit.then((status) => {
        if (child === started) exitStatus = status;
      });
      try {
        const file = path.join(dataDir, SERVICE_FILE);
        const pid = started.process.pid!;
        const info = await until(`${file} written by pid ${pid}`, () => (started.exited ? null : readServiceFile(file, pid)), START_TIMEOUT_MS);
        if (info === null) throw new Error(`the service exited during startup (${await started.exit})\n${started.stderrTail()}`);
        urls = info;
        const health = `${service.healthBase}/health`;
        const ok = await until(`${health} to answer 200`, async () => (started.exited ? false : (await fetch(health, { signal: AbortSignal.timeout(5_000) })).ok || undefined), 30_000, 100);
        if (!ok) throw new Error(`the service exited before its /health answered (${await started.exit})\n${started.stderrTail()}`);
      } catch (error) {
        // A service that did not come up is not left running.
        await started.kill('SIGKILL').catch(() => undefined); // the startup error is the one to report
        throw error;
      }
    },
    async stop(signal = 'SIGTERM') {
      const running = child;
      if (!running || running.exited) return;
      const pid = running.process.pid!;
      if (signal === 'SIGKILL') {
        // A crash takes the whole group down (worker threads die with the process anyway).
        await running.kill('SIGKILL');
        return;
      }
      // SIGTERM to the process alone, as systemd or docker stop sends it.
      running.process.kill('SIGTERM');
      try {
        await within(`pid ${pid} to exit after SIGTERM`, running.exit, STOP_TIMEOUT_MS);
      } catch (error) {
        if (!(error instanceof WaitTimeout)) throw error;
        await running.kill('SIGKILL');
        throw new Error(`the service (pid ${pid}) did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM: its process group was killed\n${running.stderrTail()}`);
      }
      // The server it started or adopted (postgres.json names the process responsible for it)
      // must be down too; one the test started itself is the test's to stop.
      const left = livePostmaster(dataDir);
      if (left !== null && embeddedOwner(dataDir) === pid) {
        throw new Error(`the service (pid ${pid}) exited on SIGTERM but left its embedded PostgreSQL (pid ${left}) running`);
      }
    },
    async admin(...args) {
      const result = await run('scripts/admin.ts', ...args);
      if (result.code !== 0) throw new Error(`admin ${args.join(' ')}: ${result.stderr}`);
      return JSON.parse(result.stdout);
    },
    run,
    async api(method, url, key, body) {
      const response = await fetch(`${service.base}/api/v1${url}`, {
        method,
        headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
    async cleanup() {
      const errors: unknown[] = [];
      await service.stop().catch((error) => errors.push(error));
      if (child && !child.exited) await child.kill('SIGKILL');
      // The embedded server outlives a killed service (its own process group): stop it too.
      await stopPostgresOf(dataDir).catch((error) => errors.push(error));
      dataDirs.delete(dataDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (errors.length === 1) throw errors[0];
      if (errors.length > 1) throw new AggregateError(errors, `cleaning up the service in ${dataDir}`);
    },
  };
  return service;
}

// ---------------------------------------------------------------------------
// Child processes in their own process group.

interface Running {
  readonly process: ChildProcess;
  /** Resolves with "code N" / "signal S" once the process has exited (and was reaped). */
  readonly exit: Promise<string>;
  readonly exited: boolean;
  /** Signals the whole process group and waits (bounded) for the exit. */
  kill(signal: NodeJS.Signals): Promise<void>;
  stderrTail(): string;
  /** The end of its log (pino writes to stdout). */
  logTail(): string;
}

const children = new Set<ChildProcess>();
const dataDirs = new Set<string>();

function startChild(env: NodeJS.ProcessEnv): Running {
  // detached: a process group of its own (pgid = pid), so kill(-pid) reaches everything it
  // started that did not leave the group, and a Ctrl-C on the terminal does not race cleanup.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  installExitHooks();
  let tail = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    process.stderr.write(chunk);
    tail = (tail + chunk).slice(-4_000);
  });
  // The last log lines, each cut short (an error's serialized context can run to kilobytes).
  const log: string[] = [];
  let partial = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop()!;
    for (const line of lines) log.push(line.length > 600 ? `${line.slice(0, 600)}…` : line);
    log.splice(0, Math.max(0, log.length - 40));
  });
  let exited = false;
  const exit = new Promise<string>((resolve) => {
    child.once('error', (error) => {
      exited = true;
      children.delete(child);
      resolve(`spawn failed: ${error.message}`);
    });
    child.once('exit', (code, signal) => {
      exited = true;
      children.delete(child);
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    });
  });
  return {
    process: child,
    exit,
    get exited() {
      return exited;
    },
    async kill(signal) {
      if (exited) return;
      killGroup(child.pid!, signal);
      await within(`pid ${child.pid} to exit after ${signal} to its process group`, exit, STOP_TIMEOUT_MS);
    },
    stderrTail: () => (tail ? `last stderr of the service:\n${tail}` : '(the service wrote nothing to stderr)'),
    logTail: () => (log.length > 0 ? `last log lines of the service:\n${log.join('\n')}` : '(the service logged nothing)'),
  };
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** The service file if `pid` wrote it (it is written by rename: absent or whole). */
function readServiceFile(file: string, pid: number): ServiceFile | undefined {
  if (!fs.existsSync(file)) return undefined;
  const info = JSON.parse(fs.readFileSync(file, 'utf8')) as ServiceFile;
  return info.pid === pid ? info : undefined;
}

// ---------------------------------------------------------------------------
// The embedded PostgreSQL of a data folder, found by its postmaster.pid.

/** The pid of the postmaster running on `${dataDir}/pg`, or null. */
export function livePostmaster(dataDir: string): number | null {
  const clusterDir = path.join(dataDir, 'pg');
  let pid: number;
  try {
    pid = Number.parseInt(fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '', 10);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return null;
  try {
    // A stale file whose pid now belongs to another process is not ours to signal.
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(clusterDir) ? pid : null;
  } catch {
    return fs.existsSync('/proc/self') ? null : pid;
  }
}

/** The process postgres.json holds responsible for stopping the server (src/db/embedded.ts). */
export function embeddedOwner(dataDir: string): number | undefined {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { ownerPid?: number }).ownerPid;
  } catch {
    return undefined;
  }
}

/** true once a client named `applicationName` is connected to the folder's server (asked as its superuser). */
export async function connectedTo(dataDir: string, applicationName: string): Promise<true | undefined> {
  const { adminUrl } = JSON.parse(fs.readFileSync(path.join(dataDir, 'postgres.json'), 'utf8')) as { adminUrl: string };
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_stat_activity where application_name = $1', [applicationName]);
    return found.rowCount ? true : undefined;
  } finally {
    await client.end();
  }
}

/** Fast shutdown (SIGINT); an immediate one (SIGQUIT), then SIGKILL, for a server that ignores it, and then this rejects. */
export async function stopPostgresOf(dataDir: string): Promise<void> {
  const pid = livePostmaster(dataDir);
  if (pid === null) return;
  const gone = () => (isAlive(pid) ? undefined : true);
  process.kill(pid, 'SIGINT');
  try {
    await until(`PostgreSQL pid ${pid} on ${dataDir} to stop after SIGINT`, gone, STOP_TIMEOUT_MS, 50);
  } catch (error) {
    for (const signal of ['SIGQUIT', 'SIGKILL'] as const) {
      if (!isAlive(pid)) break;
      process.kill(pid, signal);
      await until(`PostgreSQL pid ${pid} to stop after ${signal}`, gone, 5_000, 50).catch(() => undefined);
    }
    throw error;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A killed process stays a zombie until its parent reaps it: that is gone for our purposes.
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

// ---------------------------------------------------------------------------
// Last resort when the test process ends without cleanup() (a crash, process.exit(), a
// signal): nothing asynchronous can run then, so the children are killed outright.

let hooksInstalled = false;

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', killEverythingNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, function onSignal() {
      killEverythingNow();
      // Then die of the signal as if we had never listened, unless someone else handles it.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

function killEverythingNow(): void {
  for (const child of children) killGroup(child.pid!, 'SIGKILL');
  children.clear();
  for (const dataDir of dataDirs) {
    const pid = livePostmaster(dataDir);
    // SIGQUIT: immediate shutdown, the postmaster takes its backends down with it.
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
  }
}
