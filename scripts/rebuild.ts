// `npm run rebuild [-- --projection NAME] [--replay-connections N]`: replays the log into fresh
// read-model tables beside the live ones and swaps them in; the API keeps answering meanwhile.
// Killed halfway, it resumes when started again. A progress bar on a terminal, plain lines
// otherwise. Refused (exit 1, a one-line reason) while another rebuild runs or when the
// database's read models are of another version than this code.
import cliProgress from 'cli-progress';
import { parseArgs } from 'node:util';
import { connect } from '../src/cli/connect.ts';
import { errorLine } from '../src/cli/error-line.ts';
import { createEventStore } from '../src/eventstore/create.ts';
import { READ_SCHEMA, projectionByName, projections } from '../projections/index.ts';
import { rebuildReadModels } from '../projections/rebuild.ts';

const USAGE = 'usage: rebuild [--projection NAME]... [--replay-connections N]';

/** A wrong command line: the reason and the usage, exit 2 (as the admin CLI does). */
function usageError(message: string): never {
  console.error(`error: ${message}\n${USAGE}`);
  process.exit(2);
}

/** Anything else: one line, not a stack, exit 1. */
function fail(error: unknown): never {
  console.error(errorLine(error));
  process.exit(1);
}

let values;
try {
  values = parseArgs({ options: { projection: { type: 'string', multiple: true }, 'replay-connections': { type: 'string' }, help: { type: 'boolean', short: 'h' } } }).values;
} catch (error) {
  usageError((error as Error).message);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const replayConnections = values['replay-connections'] === undefined ? undefined : Number(values['replay-connections']);
if (replayConnections !== undefined && !(Number.isInteger(replayConnections) && replayConnections >= 1)) {
  usageError('--replay-connections takes a whole number from 1 (read models made at once; default: the cores of this machine)');
}
// A name given twice is the same read model: built and swapped in once.
const chosen = values.projection ? [...new Set(values.projection)].map((name) => projectionByName(name) ?? name) : projections;
const unknown = chosen.filter((p) => typeof p === 'string');
if (unknown.length > 0) {
  usageError(`unknown projection ${unknown.join(', ')}; choose from ${projections.map((p) => p.name).join(', ')}`);
}

// One connection per read model rebuilt (projections/runner.ts), one for the rebuild's lock,
// and room for reading the log.
const db = await connect('vidtrack-rebuild', projections.length + 4).catch(fail);
const store = createEventStore(db.config, db.pool);
try {
  const total = await store.countEvents();
  const names = chosen.map((p) => (typeof p === 'string' ? p : p.name)).join(', ');
  const started = performance.now();
  const rate = (events: number) => Math.round(events / Math.max(0.001, (performance.now() - started) / 1000));
  let onProgress: (events: number) => void;
  // On PostgreSQL each read model is built where the log lies, whole (projections/replay.ts):
  // the events then count at the end, and each read model is told as it is done.
  let onReplayed: (projection: string, seconds: number) => void;
  let finish: () => void;
  if (process.stdout.isTTY) {
    const bar = new cliProgress.SingleBar(
      { format: `rebuilding ${names} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {eta_formatted} | {built}` },
      cliProgress.Presets.shades_classic,
    );
    const built: string[] = [];
    bar.start(Math.max(total, 1), 0, { rate: 0, built: '' });
    onProgress = (events) => bar.update(Math.min(events, total), { rate: rate(events) });
    onReplayed = (projection) => {
      built.push(projection);
      bar.update({ built: `built ${built.join(', ')}` });
    };
    finish = () => bar.stop();
  } else {
    let last = 0;
    console.log(`rebuilding ${names} from ${total} events`);
    onProgress = (events) => {
      if (performance.now() - last < 1_000) return;
      last = performance.now();
      const eta = Math.max(0, (total - events) / Math.max(1, rate(events)));
      console.log(`${events}/${total} events, ${rate(events)} events/s, ETA ${eta.toFixed(0)} s`);
    };
    onReplayed = (projection, seconds) => console.log(`built ${projection} where the log lies in ${seconds.toFixed(1)} s`);
    finish = () => undefined;
  }
  const result = await rebuildReadModels(store, db.pool, {
    projections: chosen.filter((p) => typeof p !== 'string'),
    liveSchema: READ_SCHEMA,
    onProgress,
    replay: { connections: replayConnections, onReplayed },
    onDropped: (reason) => console.log(reason),
    onBuilt: finish,
  });
  console.log(`rebuilt ${names}: ${result.events} events in ${result.seconds.toFixed(1)} s (${rate(result.events)} events/s), swapped in`);
} catch (error) {
  // A refusal (BuildLocked, VersionMismatch) or a failure: one line either way.
  console.error(errorLine(error));
  process.exitCode = 1;
} finally {
  await store.close();
  await db.close();
}
