// How the command-line tools reach the service: DATABASE_URL, or the embedded server of the
// data folder (the one `npm start` runs; started here if it is not running, and then stopped
// again by close(), or by SIGINT/SIGTERM, which close before exiting). The connection is the service's own composition (src/service.ts) with no
// part running: the database, the log, the running service's clock and read-your-writes.
// Read models are not created here: only the projector does that (projections/versions.ts).
import type pg from 'pg';
import pino from 'pino';
import type { Clock } from '../clock.ts';
import { loadConfig, type Config } from '../config.ts';
import type { EventStore } from '../eventstore/port.ts';
import { createService } from '../service.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';

export interface Connection {
  /** The settings read from the environment (EVENT_STORE etc.). */
  config: Config;
  url: string;
  pool: pg.Pool;
  /** The log (EVENT_STORE picks PostgreSQL or EventStoreDB). */
  store: EventStore;
  /** Follows the read models of whichever process projects: waitFor(position) is read-your-writes. */
  watcher: ProjectionWatcher;
  /** The clock the running service keeps (TIME_SCALE), read, never changed. */
  clock: Clock;
  close(): Promise<void>;
}

/** `poolSize`: connections the tool may hold at once (default 4; a rebuild holds one per read model). */
export async function connect(applicationName: string, poolSize = 4): Promise<Connection> {
  const config = loadConfig(process.env, []);
  // stdout is the tools' answer (JSON): the service's log goes to stderr.
  const log = pino({ level: config.logLevel === 'info' ? 'warn' : config.logLevel, base: { tool: applicationName } }, pino.destination(2));
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= service.stop().finally(() => {
      for (const signal of SIGNALS) process.off(signal, onSignal);
    }));
  // Ctrl-C (or a supervisor's SIGTERM) on a tool using the folder's embedded server would end
  // the process with the server running and postgres.json naming a dead process: the signal
  // closes first (stopping the server, or leaving it to the other processes using it), then
  // exits as a shell reports a death by that signal. The same signal again (npm forwards the
  // terminal's Ctrl-C to the tool as well) waits for the same close.
  const onSignal = (signal: NodeJS.Signals) => {
    void close().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  const service = createService(config, {
    parts: [],
    clock: 'read',
    log,
    poolSize,
    applicationName,
    onEmbedded: () => {
      for (const signal of SIGNALS) process.on(signal, onSignal);
    },
  });
  let running;
  try {
    running = await service.start();
  } catch (error) {
    // A start cut short by a signal: the signal's close exits once the server is stopped.
    if (closing) await closing;
    for (const signal of SIGNALS) process.off(signal, onSignal);
    throw error;
  }
  return {
    config,
    url: running.databaseUrl,
    pool: running.pool,
    store: running.store,
    watcher: running.watcher,
    clock: running.clock,
    close,
  };
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;
