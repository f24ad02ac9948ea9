// `npm start [-- ROLE]`: the service (src/service.ts) as a process. Roles: all (default),
// api, projector, scheduler.
//
// SIGTERM and SIGINT stop it within 10 s (close-with-grace's deadline; the service's own
// budgets fit inside it, the embedded PostgreSQL included). A second signal, or the deadline,
// ends the process at once with code 1; the embedded PostgreSQL is then told to stop as well.
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
import { createService } from './service.ts';

const config = loadConfig();
const log = pino({ level: config.logLevel, base: { role: config.role } });
const service = createService(config, { log, serviceFile: true });
let embeddedPid: number | null = null;

closeWithGrace(
  {
    delay: 10_000,
    logger: { error: (message: unknown) => log.error({ err: message }, 'while stopping') },
    onTimeout: (delay) => {
      log.error({ delay }, 'did not stop in time: exiting now');
      stopEmbeddedNow();
    },
    onSecondSignal: (signal) => {
      log.warn({ signal }, 'second signal: exiting now');
      stopEmbeddedNow();
    },
  },
  async ({ signal, err }) => {
    if (err) log.fatal({ err }, 'unexpected error: stopping');
    else log.info({ signal }, 'stopping');
    await service.stop();
  },
);

/** A fast shutdown of our embedded PostgreSQL that finishes without us (it is its own process group). */
function stopEmbeddedNow(): void {
  if (embeddedPid === null) return;
  try {
    process.kill(embeddedPid, 'SIGINT');
  } catch {
    // already gone
  }
}

try {
  const running = await service.start();
  embeddedPid = running.embedded?.owned ? running.embedded.pid : null;
} catch (err) {
  log.fatal({ err }, 'could not start');
  process.exitCode = 1;
  await service.stop();
  process.exit(1);
}
