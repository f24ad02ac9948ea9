// `npm run audit -- --org ORG_ID [--at ISO_TIME] [--json]` or `--all`: replays the log and
// prints each organization's ledger (deposits, charges, snapshots billed) and its balance,
// uncharged usage and total charged at that instant; then checks them against the usage
// read model and exits non-zero on any difference, down to one micro-dollar.
import { parseArgs } from 'node:util';
import { applyToLedger, emptyLedger, eventTime, orgOf, unchargedUsage, type Ledger } from '../src/audit/ledger.ts';
import { connect } from '../src/cli/connect.ts';
import type { DomainEvent } from '../src/domain/events.ts';
import { toUsd } from '../src/domain/money.ts';
import { createEventStore } from '../src/eventstore/create.ts';
import { comparePositions, type Position } from '../src/eventstore/port.ts';
import { READ_SCHEMA } from '../projections/index.ts';

const USAGE = 'usage: audit (--org ORG_ID | --all) [--at ISO_TIME] [--json]';
const PAGE = 10_000;
let args;
try {
  args = parseArgs({ options: { org: { type: 'string', multiple: true }, all: { type: 'boolean' }, at: { type: 'string' }, json: { type: 'boolean' } } }).values;
} catch (error) {
  console.error(`error: ${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (!args.all && !args.org) {
  console.error(`error: name an organization with --org, or --all\n${USAGE}`);
  process.exit(2);
}
const at = args.at === undefined ? null : new Date(args.at);
if (at && Number.isNaN(at.getTime())) {
  console.error(`error: --at must be an ISO 8601 time, got "${args.at}"\n${USAGE}`);
  process.exit(2);
}

/** With every usage field null when no usage row matched (the checkpoint alone). */
interface UsageRow {
  org_id: string | null;
  balance: string;
  total_charged: string;
  live_snapshots: string;
  live_cost: string;
  commit_position: string | null;
  prepare_position: string | null;
}

const db = await connect('vidtrack-audit');
// The log through its port, whichever store EVENT_STORE names.
const store = createEventStore(db.config, db.pool);
let failed = false;
try {
  // The read model and the position it has reached, in one statement: the log is replayed
  // exactly that far, so a difference is a difference, not a lag. The checkpoint comes even
  // when no usage row does: organizations missing from the read model are what an audit finds.
  const { rows } = await db.pool.query<UsageRow>(
    `SELECT u.org_id, u.balance, u.total_charged, u.live_snapshots, u.live_cost, c.commit_position, c.prepare_position
     FROM (SELECT 1) AS one
     LEFT JOIN ${READ_SCHEMA}.checkpoints c ON c.projection = 'usage'
     LEFT JOIN ${READ_SCHEMA}.usage u ON $1::text[] IS NULL OR u.org_id = ANY($1::text[])`,
    [args.all ? null : args.org!],
  );
  const readModel = new Map(rows.flatMap((r) => (r.org_id === null ? [] : [[r.org_id, r] as const])));
  const checkpoint: Position | null = rows[0]?.commit_position ? { commit: BigInt(rows[0].commit_position), prepare: BigInt(rows[0].prepare_position!) } : null;
  // A read model that has projected nothing is audited against the whole log.
  const until = at || !checkpoint ? await store.headPosition() : checkpoint;
  const orgs = args.all ? [...readModel.keys()] : args.org!;

  const ledgers = new Map<string, Ledger>(orgs.map((org) => [org, emptyLedger(org)]));
  const slots = new Set<string>();
  const seen = new Set<string>();
  // Page by page, without holding the log in memory.
  for (let after: Position | null = null; until && (!after || comparePositions(after, until) < 0); ) {
    const page = await store.readAll(after, PAGE);
    if (page.length === 0) break;
    for (const recorded of page) {
      if (comparePositions(recorded.position, until) > 0) break;
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

  const reports = [];
  for (const ledger of ledgers.values()) {
    const row = readModel.get(ledger.orgId);
    const figures = {
      balance: ledger.balance,
      uncharged: unchargedUsage(ledger),
      totalCharged: ledger.totalCharged,
      liveSnapshots: ledger.liveSnapshots,
    };
    const differences: string[] = [];
    if (!seen.has(ledger.orgId)) differences.push('no such organization in the log');
    else if (!at) {
      const stored = row
        ? { balance: Number(row.balance), uncharged: Number(row.live_cost) - Number(row.total_charged), totalCharged: Number(row.total_charged), liveSnapshots: Number(row.live_snapshots) }
        : null;
      if (!stored) differences.push('missing from the usage read model');
      else for (const key of Object.keys(figures) as Array<keyof typeof figures>) {
        if (stored[key] !== figures[key]) differences.push(`${key}: log ${figures[key]}, read model ${stored[key]}`);
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
          test_snapshots: ledger.testSnapshots,
          ledger: ledger.entries.map((e) => ({ at: e.at, kind: e.kind, amount_usd: toUsd(e.amount), ...(e.snapshots !== undefined ? { snapshots: e.snapshots } : {}), ...(e.reference ? { reference: e.reference } : {}) })),
          snapshots_billed_by_video: Object.fromEntries(ledger.snapshotsByVideo),
          problems: ledger.problems,
          differences,
          compared_with_read_model: !at,
          ok: differences.length === 0 && ledger.problems.length === 0,
        })),
        null,
        2,
      ),
    );
  } else {
    for (const { ledger, figures, differences } of reports) {
      console.log(`organization ${ledger.orgId}${at ? ` at ${at.toISOString()}` : ''}`);
      for (const e of ledger.entries) {
        const what = e.kind === 'deposit' ? `deposit ${toUsd(e.amount).toFixed(6)} USD${e.reference ? ` (${e.reference})` : ''}` : `charge  ${toUsd(e.amount).toFixed(6)} USD for ${e.snapshots} snapshots`;
        console.log(`  ${e.at}  ${what}`);
      }
      for (const [video, n] of ledger.snapshotsByVideo) console.log(`  video ${video}: ${n} live snapshots`);
      console.log(`  balance ${toUsd(figures.balance)} USD, uncharged usage ${toUsd(figures.uncharged)} USD, total charged ${toUsd(figures.totalCharged)} USD, ${figures.liveSnapshots} live snapshots`);
      for (const p of ledger.problems) console.log(`  PROBLEM ${p}`);
      for (const d of differences) console.log(`  DIFFERENCE ${d}`);
      console.log(at ? '  (not compared with the read model: it shows the present)' : differences.length === 0 && ledger.problems.length === 0 ? '  OK: the read model matches the log' : '  FAILED');
    }
  }
} finally {
  await store.close();
  await db.close();
}
process.exitCode = failed ? 1 : 0;
