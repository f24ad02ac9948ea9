// `npm start [-- ROLE]`: the service (src/service.ts) as a process. Roles: all (default),
// api, projector, scheduler.
//
// SIGTERM and SIGINT stop it within 10 s (close-with-grace's deadline; the service's own
// budgets fit inside it, the embedded PostgreSQL included). A second signal, or the deadline,
// ends the process at once with code 1; the embedded PostgreSQL is then told to stop as well
// (unless another live process, such as the admin CLI, still uses it: src/db/embedded.ts).
// The same signal again within ECHO_MS of the first is not a second request but the first one
// arriving twice: under `npm start`, a Ctrl-C reaches the whole process group, npm included,
// and npm forwards it to its child as well (SIGTERM too, when a supervisor signals every
// process of a cgroup). Run the service as `node --import tsx src/main.ts` (package.json,
// Dockerfile), not under the `tsx` command, whose parent process re-sends a signal the service
// does not acknowledge within 30 ms and then SIGKILLs it.
//
// An unhandled rejection or uncaught exception is not logged-and-ignored: each part that can
// recover from its failures (scheduler rounds, the projector, the e-mail reactor, the pool's
// idle connections, the watcher's LISTEN) handles them where it knows what state it is in. An
// error that reaches the process is one nobody expected, in a state nobody can vouch for
// (money is involved), so it is logged and the service stops cleanly with code 1, to be
// restarted by its supervisor from the log, which loses nothing.
import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { loadConfig } from './config.ts';
import type { EmbeddedPostgres } from './db/embedded.ts';
import { createService } from './service.ts';

const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    // A setting the service cannot run on: its name and what it takes, not a stack.
    process.stderr.write(`error: ${(error as Error).message}\n`);
    process.exit(2);
  }
})();
const log = pino({ level: config.logLevel, base: { role: config.role } });
let embedded: EmbeddedPostgres | null = null;
// Known as soon as the server runs: a second signal during the rest of the start stops it too.
const service = createService(config, { log, serviceFile: true, onEmbedded: (server) => (embedded = server) });

/** Long enough for npm's forwarded copy of a signal on a busy machine; shorter than a person's second Ctrl-C. */
const ECHO_MS = 1_000;
// close-with-grace's own signal handling would take the forwarded copy for a second signal:
// it is given the errors and 'beforeExit' only, and signals come through onSignal().
const SIGNALS = ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2', 'SIGTERM'] as const;
let firstSignal: { signal: NodeJS.Signals; at: number } | null = null;
let stoppingOnItsOwn = false;

const grace = closeWithGrace(
  {
    delay: 10_000,
    skip: [...SIGNALS],
    logger: { error: (message: unknown) => log.error({ err: message }, 'while stopping') },
    onTimeout: (delay) => {
      log.error({ delay }, 'did not stop in time: exiting now');
      embedded?.stopNow();
    },
    onSecondError: (err) => {
      log.fatal({ err }, 'unexpected error while stopping: exiting now');
      embedded?.stopNow();
    },
  },
  async ({ err, manual }) => {
    // manual: a signal, logged by onSignal(); otherwise an error or 'beforeExit'.
    if (!manual) stoppingOnItsOwn = true;
    if (err) log.fatal({ err }, 'unexpected error: stopping');
    else if (!manual) log.info('stopping');
    await service.stop();
  },
);

function onSignal(signal: NodeJS.Signals): void {
  if (firstSignal === null && !stoppingOnItsOwn) {
    firstSignal = { signal, at: Date.now() };
    log.info({ signal }, 'stopping');
    void grace.close();
    return;
  }
  if (firstSignal && signal === firstSignal.signal && Date.now() - firstSignal.at < ECHO_MS) {
    log.debug({ signal }, 'the same signal again: the first one, forwarded');
    return;
  }
  log.warn({ signal }, 'second signal: exiting now');
  embedded?.stopNow();
  process.exit(1);
}
for (const signal of SIGNALS) process.on(signal, onSignal);

try {
  await service.start();
} catch (err) {
  // A start cut short by a signal is the stop asked for: close-with-grace ends the process
  // once the stop has finished.
  if (firstSignal === null) {
    log.fatal({ err }, 'could not start');
    process.exitCode = 1;
    await service.stop();
    process.exit(1);
  }
  log.info({ err: (err as Error).message }, 'start cut short by the stop');
}
