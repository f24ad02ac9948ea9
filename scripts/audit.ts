// `npm run audit -- --org ORG_ID [--at ISO_TIME] [--json]` or `--all`: replays the log and
// prints each organization's ledger (deposits, charges, snapshots billed) and its balance,
// uncharged usage, total charged, snapshot counts and active videos at that instant (the log's
// head: now). Without --at it then checks each of those figures in the usage read model against
// the log at the position the read model has reached, and exits non-zero on any difference,
// down to one micro-dollar, or when that position is not the log's head (the read model lags:
// its figures are not now).
import { parseArgs } from 'node:util';
import { activeVideos, applyToLedger, emptyLedger, eventTime, orgOf, unchargedUsage, type Ledger } from '../src/audit/ledger.ts';
import { connect } from '../src/cli/connect.ts';
import { errorLine } from '../src/cli/error-line.ts';
import type { DomainEvent } from '../src/domain/events.ts';
import { toUsd } from '../src/domain/money.ts';
import { createEventStore } from '../src/eventstore/create.ts';
import { comparePositions, formatPosition, type Position } from '../src/eventstore/port.ts';
import { READ_SCHEMA } from '../projections/index.ts';
import type { UsageRow as UsageFigures } from '../projections/queries.ts';
import { ProjectionWatcher } from '../projections/watcher.ts';

const USAGE = 'usage: audit (--org ORG_ID | --all) [--at ISO_TIME] [--json]';
const PAGE = 10_000;
/** How long the read model is given to reach the log's head as the audit starts (a projector at work gets there in moments). */
const CATCH_UP_MS = 5_000;
let args;
try {
  args = parseArgs({ options: { org: { type: 'string', multiple: true }, all: { type: 'boolean' }, at: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } }).values;
} catch (error) {
  console.error(`error: ${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!args.all && !args.org) {
  console.error(`error: name an organization with --org, or --all\n${USAGE}`);
  process.exit(2);
}
/**
 * An ISO 8601 date (its midnight UTC) or date-time with its zone (Z or an offset). Date parses
 * much else ("Dec 6" as 2001-12-06) and takes a time without a zone as this machine's.
 */
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))?$/;
function parseAt(text: string): Date | null {
  const match = ISO_TIME.exec(text);
  if (!match) return null;
  // Date rolls a day past the month's end over (2026-02-30 as March 2): refused instead.
  const [year, month, day] = match.slice(1, 4).map(Number) as [number, number, number];
  const date = new Date(Date.UTC(year, month - 1, day));
  const time = new Date(text);
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day && !Number.isNaN(time.getTime()) ? time : null;
}
const at = args.at === undefined ? null : parseAt(args.at);
if (args.at !== undefined && !at) {
  console.error(`error: --at must be an ISO 8601 date (2026-12-06, its midnight UTC) or date-time with its zone (2026-12-06T12:00:00Z), got "${args.at}"\n${USAGE}`);
  process.exit(2);
}

/** A reference as one line of text: its control characters escaped, so that none starts a line of its own (deposits made before the admin CLI refused them). */
function printable(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * What the audit compares with the usage read model: every figure of it that GET /usage shows
 * (UsageFigures, what the API reads), and the snapshots charged the charge job bills from.
 */
type Figures = UsageFigures & { snapshotsCharged: number };

function figuresOf(ledger: Ledger): Figures {
  return {
    balance: ledger.balance,
    totalCharged: ledger.totalCharged,
    uncharged: unchargedUsage(ledger),
    liveSnapshots: ledger.liveSnapshots,
    testSnapshots: ledger.testSnapshots,
    activeLive: activeVideos(ledger, 'live'),
    activeTest: activeVideos(ledger, 'test'),
    snapshotsCharged: ledger.snapshotsCharged,
  };
}

/** With every usage field null when no usage row matched (the checkpoint alone). */
interface UsageRow {
  org_id: string | null;
  balance: string;
  total_charged: string;
  live_snapshots: string;
  live_cost: string;
  test_snapshots: string;
  active_live: number;
  active_test: number;
  snapshots_charged: string;
  commit_position: string | null;
  prepare_position: string | null;
}

const db = await connect('vidtrack-audit').catch((error: unknown) => {
  console.error(errorLine(error));
  process.exit(1);
});
// The log through its port, whichever store EVENT_STORE names.
const store = createEventStore(db.config, db.pool);
let failed = false;
try {
  // Now is the log's head as the audit starts. A projector at work is given a moment to reach
  // it, so that a lag reported below is a projector down or stalled, not one busy.
  const head = await store.headPosition();
  if (!at && head) {
    const watcher = new ProjectionWatcher();
    try {
      await watcher.follow(db.url, db.pool, READ_SCHEMA, ['usage']);
      await watcher.waitFor(head, CATCH_UP_MS);
    } finally {
      await watcher.close();
    }
  }
  // The read model and the position it has reached, in one statement: it is compared with the
  // log replayed exactly that far, so a difference is a difference, not a lag. The checkpoint
  // comes even when no usage row does: organizations missing from the read model are what an
  // audit finds.
  const { rows } = await db.pool.query<UsageRow>(
    `SELECT u.org_id, u.balance, u.total_charged, u.live_snapshots, u.live_cost, u.test_snapshots, u.active_live, u.active_test, u.snapshots_charged,
       c.commit_position, c.prepare_position
     FROM (SELECT 1) AS one
     LEFT JOIN ${READ_SCHEMA}.checkpoints c ON c.projection = 'usage'
     LEFT JOIN ${READ_SCHEMA}.usage u ON $1::text[] IS NULL OR u.org_id = ANY($1::text[])`,
    [args.all ? null : args.org!],
  );
  const readModel = new Map(rows.flatMap((r) => (r.org_id === null ? [] : [[r.org_id, r] as const])));
  const checkpoint: Position | null = rows[0]?.commit_position ? { commit: BigInt(rows[0].commit_position), prepare: BigInt(rows[0].prepare_position!) } : null;
  // The log is replayed to now, or to the checkpoint if the read model went past the head meanwhile.
  const until = checkpoint && (!head || comparePositions(checkpoint, head) > 0) ? checkpoint : head;
  const orgs = args.all ? [...readModel.keys()] : args.org!;

  const ledgers = new Map<string, Ledger>(orgs.map((org) => [org, emptyLedger(org)]));
  const slots = new Set<string>();
  const seen = new Set<string>();
  /** Each organization's figures where the read model stands (those it has seen by then), to compare with it. */
  let atCheckpoint: Map<string, Figures> | null = null;
  const figuresAtCheckpoint = () => new Map([...ledgers.values()].flatMap((ledger) => (seen.has(ledger.orgId) ? [[ledger.orgId, figuresOf(ledger)] as const] : [])));
  /** Events in the log past the read model's checkpoint. */
  let lag = 0;
  // Page by page, without holding the log in memory.
  for (let after: Position | null = null; until && (!after || comparePositions(after, until) < 0); ) {
    const page = await store.readAll(after, PAGE);
    if (page.length === 0) break;
    for (const recorded of page) {
      if (comparePositions(recorded.position, until) > 0) break;
      if (!checkpoint || comparePositions(recorded.position, checkpoint) > 0) {
        atCheckpoint ??= figuresAtCheckpoint();
        lag++;
      }
      const event = { type: recorded.type, data: recorded.data } as DomainEvent;
      const orgId = orgOf(event);
      if (!orgId) continue;
      seen.add(orgId);
      const ledger = args.all && !ledgers.has(orgId) ? ledgers.set(orgId, emptyLedger(orgId)).get(orgId)! : ledgers.get(orgId);
      if (!ledger || (at && eventTime(event) > at.toISOString())) continue;
      applyToLedger(ledger, event, slots);
    }
    after = page[page.length - 1]!.position;
  }
  atCheckpoint ??= figuresAtCheckpoint();
  if (!at && lag > 0) failed = true;
  const lagLine = `LAG the usage read model is ${lag} events behind the log (at ${checkpoint ? formatPosition(checkpoint) : 'the start'}, the log at ${until ? formatPosition(until) : 'the start'}): the figures above are the log's, compared with the read model where it stands, not now`;

  const reports = [];
  for (const ledger of ledgers.values()) {
    const row = readModel.get(ledger.orgId);
    const figures = figuresOf(ledger);
    const differences: string[] = [];
    const expected = atCheckpoint.get(ledger.orgId);
    if (!seen.has(ledger.orgId)) differences.push('no such organization in the log');
    // An organization the read model has not reached yet is the lag's, not a difference.
    else if (!at && expected) {
      const stored: Figures | null = row
        ? {
            balance: Number(row.balance),
            totalCharged: Number(row.total_charged),
            uncharged: Number(row.live_cost) - Number(row.total_charged),
            liveSnapshots: Number(row.live_snapshots),
            testSnapshots: Number(row.test_snapshots),
            activeLive: row.active_live,
            activeTest: row.active_test,
            snapshotsCharged: Number(row.snapshots_charged),
          }
        : null;
      if (!stored) differences.push('missing from the usage read model');
      else for (const key of Object.keys(expected) as Array<keyof Figures>) {
        if (stored[key] !== expected[key]) differences.push(`${key}: log ${expected[key]}, read model ${stored[key]}`);
      }
    }
    if (differences.length > 0 || ledger.problems.length > 0) failed = true;
    reports.push({ ledger, figures, differences });
  }

  if (args.json) {
    console.log(
      JSON.stringify(
        reports.map(({ ledger, figures, differences }) => ({
          org_id: ledger.orgId,
          at: at?.toISOString() ?? null,
          balance_usd: toUsd(figures.balance),
          uncharged_usage_usd: toUsd(figures.uncharged),
          total_charged_usd: toUsd(figures.totalCharged),
          live_snapshots: figures.liveSnapshots,
          test_snapshots: figures.testSnapshots,
          snapshots_charged: figures.snapshotsCharged,
          active_videos: { live: figures.activeLive, test: figures.activeTest },
          ledger: ledger.entries.map((e) => ({ at: e.at, kind: e.kind, amount_usd: toUsd(e.amount), ...(e.snapshots !== undefined ? { snapshots: e.snapshots } : {}), ...(e.reference ? { reference: e.reference } : {}) })),
          snapshots_billed_by_video: Object.fromEntries(ledger.snapshotsByVideo),
          problems: ledger.problems,
          differences,
          compared_with_read_model: !at,
          read_model_lag_events: at ? null : lag,
          ok: differences.length === 0 && ledger.problems.length === 0 && (at !== null || lag === 0),
        })),
        null,
        2,
      ),
    );
  } else {
    if (!at && lag > 0 && reports.length === 0) console.log(lagLine);
    for (const { ledger, figures, differences } of reports) {
      console.log(`organization ${ledger.orgId}${at ? ` at ${at.toISOString()}` : ''}`);
      for (const e of ledger.entries) {
        const what = e.kind === 'deposit' ? `deposit ${toUsd(e.amount).toFixed(6)} USD${e.reference ? ` (${printable(e.reference)})` : ''}` : `charge  ${toUsd(e.amount).toFixed(6)} USD for ${e.snapshots} snapshots`;
        console.log(`  ${e.at}  ${what}`);
      }
      for (const [video, n] of ledger.snapshotsByVideo) console.log(`  video ${video}: ${n} live snapshots`);
      console.log(`  balance ${toUsd(figures.balance)} USD, uncharged usage ${toUsd(figures.uncharged)} USD, total charged ${toUsd(figures.totalCharged)} USD, ${figures.liveSnapshots} live snapshots`);
      console.log(`  ${figures.snapshotsCharged} snapshots charged, ${figures.testSnapshots} test snapshots, active videos: ${figures.activeLive} live, ${figures.activeTest} test`);
      for (const p of ledger.problems) console.log(`  PROBLEM ${p}`);
      for (const d of differences) console.log(`  DIFFERENCE ${d}`);
      if (!at && lag > 0) console.log(`  ${lagLine}`);
      console.log(at ? '  (not compared with the read model: it shows the present)' : differences.length === 0 && ledger.problems.length === 0 && lag === 0 ? '  OK: the read model matches the log' : '  FAILED');
    }
  }
} catch (error) {
  console.error(errorLine(error));
  failed = true;
} finally {
  await store.close();
  await db.close();
}
process.exitCode = failed ? 1 : 0;
