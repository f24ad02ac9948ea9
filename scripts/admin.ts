// The admin CLI: the only way to create organizations and keys, fund accounts and cancel
// videos. Every change is a command, so everything lands in the event log. It also shows and
// retries the events the projector parked. Prints one JSON object on stdout; errors go to
// stderr with a non-zero exit.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { deposit, issueKey, openOrganization, revokeKey, setLowBalanceThreshold } from '../src/commands/account-commands.ts';
import { inviteMember } from '../src/commands/member-commands.ts';
import { cancelVideo } from '../src/commands/video-commands.ts';
import { systemClock } from '../src/clock.ts';
import { inviteUrl, sendInvitation } from '../src/dashboard/invitations.ts';
import { organizationName } from '../src/dashboard/reads.ts';
import { readRunningService, urlOf } from '../src/service-file.ts';
import { connect } from '../src/cli/connect.ts';
import { errorLine } from '../src/cli/error-line.ts';
import { readServiceClock } from '../src/db/service-clock.ts';
import { streamIdOfAccount } from '../src/domain/account.ts';
import { DomainError } from '../src/domain/errors.ts';
import { MAX_BALANCE, parseUsd, toUsd } from '../src/domain/money.ts';
import { PLANS, type Plan } from '../src/domain/platform.ts';
import { MAX_RATE_LIMIT } from '../src/domain/storable.ts';
import { createEventStore } from '../src/eventstore/create.ts';
import { READ_SCHEMA, projections } from '../projections/index.ts';
import { listParked, retryParked } from '../projections/parking.ts';
import { ProjectionWatcher } from '../projections/watcher.ts';

const USAGE = `usage:
  admin org create --name NAME --email EMAIL [--plan free|pro|enterprise] [--rate-limit N]
                   (--rate-limit: requests per minute per key; required for enterprise, overrides free 60 / pro 300)
  admin org set --org ORG_ID --low-balance USD|default
  admin key create --org ORG_ID --name NAME [--mode live|test]
  admin key revoke --key KEY_ID
  admin deposit --org ORG_ID --amount USD [--reference TEXT]   (a reference is applied once: the same deposit again is not)
  admin video cancel --video VIDEO_ID
  admin member invite --org ORG_ID --email EMAIL [--role owner|member]   (again: a new link, the unused one stops working)
  admin parked list [--event EVENT_ID]
  admin parked retry (--event EVENT_ID | --all)`;

class UsageError extends Error {}

/** How long a change waits to be visible to the running service before the CLI answers. */
const SETTLE_MS = 30_000;

const options = {
  name: { type: 'string' },
  email: { type: 'string' },
  plan: { type: 'string' },
  'rate-limit': { type: 'string' },
  org: { type: 'string' },
  mode: { type: 'string' },
  key: { type: 'string' },
  amount: { type: 'string' },
  reference: { type: 'string' },
  video: { type: 'string' },
  'low-balance': { type: 'string' },
  role: { type: 'string' },
  event: { type: 'string' },
  all: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

type Option = Exclude<keyof Values, 'help'>;

/** Each command's options, as USAGE shows them: another command's option is refused, not dropped. */
const COMMANDS: Record<string, { required: Option[]; optional: Option[] }> = {
  'org create': { required: ['name', 'email'], optional: ['plan', 'rate-limit'] },
  'org set': { required: ['org', 'low-balance'], optional: [] },
  'key create': { required: ['org', 'name'], optional: ['mode'] },
  'key revoke': { required: ['key'], optional: [] },
  deposit: { required: ['org', 'amount'], optional: ['reference'] },
  'video cancel': { required: ['video'], optional: [] },
  'member invite': { required: ['org', 'email'], optional: ['role'] },
  'parked list': { required: [], optional: ['event'] },
  'parked retry': { required: [], optional: ['event', 'all'] },
};

function required(values: Values, name: keyof Values): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const command = positionals.join(' ');
  if (!Object.hasOwn(COMMANDS, command)) {
    throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  }
  // Check the arguments before touching the database.
  const { required: needs, optional } = COMMANDS[command]!;
  for (const name of Object.keys(values) as Option[]) {
    if (!needs.includes(name) && !optional.includes(name)) throw new UsageError(`${command} takes no --${name}`);
  }
  for (const name of needs) required(values, name);
  const plan = (values.plan ?? 'free') as Plan;
  if (!PLANS.includes(plan)) throw new UsageError(`--plan must be one of ${PLANS.join(', ')}`);
  const rateLimit = values['rate-limit'] === undefined ? null : Number(values['rate-limit']);
  if (rateLimit !== null && !(Number.isInteger(rateLimit) && rateLimit > 0 && rateLimit <= MAX_RATE_LIMIT)) {
    throw new UsageError(`--rate-limit must be a positive integer, at most ${MAX_RATE_LIMIT}`);
  }
  if (command === 'org create' && plan === 'enterprise' && rateLimit === null) throw new UsageError('--plan enterprise needs --rate-limit (its requests per minute)');
  const mode = values.mode ?? 'live';
  if (mode !== 'live' && mode !== 'test') throw new UsageError('--mode must be live or test');
  const amount = values.amount === undefined ? null : parseUsd(values.amount);
  if (command === 'deposit') {
    // Well written but too large is said as such: parseUsd refuses past 2^53 micros as well.
    if (/^\d+(?:\.\d{1,6})?$/.test(values.amount!.trim()) && (amount === null || amount > MAX_BALANCE)) {
      throw new UsageError(`--amount is too large: a balance holds at most ${toUsd(MAX_BALANCE)} USD`);
    }
    if (amount === null || amount <= 0) throw new UsageError('--amount must be a positive USD amount with at most 6 decimals, e.g. 25 or 10.50');
  }
  if (values.reference !== undefined && values.reference.trim() === '') throw new UsageError('--reference must not be empty');
  // The audit prints references one a line: a line break in one would forge lines there.
  if (values.reference !== undefined && /\p{Cc}/u.test(values.reference)) throw new UsageError('--reference must not contain control characters (line breaks, tabs, escapes)');
  const lowBalanceText = values['low-balance'];
  const lowBalance = lowBalanceText === undefined || lowBalanceText === 'default' ? null : parseUsd(lowBalanceText);
  if (lowBalanceText !== undefined && lowBalanceText !== 'default' && lowBalance === null) {
    throw new UsageError('--low-balance must be a USD amount with at most 6 decimals (e.g. 5 or 2.50), or "default"');
  }
  const role = values.role ?? 'owner';
  if (role !== 'owner' && role !== 'member') throw new UsageError('--role must be owner or member');
  if (command === 'parked retry' && !values.all === (values.event === undefined)) throw new UsageError('parked retry takes --event EVENT_ID or --all');
  if (command.startsWith('parked')) return parked(command, values);

  const db = await connect('vidtrack-admin');
  const store = createEventStore(db.config, db.pool);
  const watcher = new ProjectionWatcher();
  try {
    const clock = await readServiceClock(db.pool);
    await watcher.follow(db.url, db.pool, READ_SCHEMA, projections.map((p) => p.name));
    // Answer once the running service can see the change: every API request that arrives
    // after this answer sees it (src/api/read-barrier.ts), so a deposit is spendable and a
    // revoked key refused at once. The change is in the log either way: a projector that is
    // down or far behind is said on stderr rather than waited for without end.
    const settled = async <T>(result: T, position: Parameters<ProjectionWatcher['waitFor']>[0]) => {
      if (!(await watcher.waitFor(position, SETTLE_MS))) {
        process.stderr.write(`warning: recorded, but the read models have not shown it within ${SETTLE_MS / 1000} s (is a projector running?)\n`);
      }
      return result;
    };
    let output: unknown;
    switch (command) {
      case 'org create': {
        const { orgId, position } = await openOrganization(store, clock, { name: required(values, 'name'), email: required(values, 'email'), plan, rateLimit });
        output = await settled({ org_id: orgId }, position);
        break;
      }
      case 'org set': {
        const orgId = required(values, 'org');
        const handled = await setLowBalanceThreshold(store, clock, orgId, lowBalance);
        output = await settled({ org_id: orgId, low_balance_usd: lowBalance === null ? null : toUsd(lowBalance) }, handled.position);
        break;
      }
      case 'key create': {
        const { keyId, apiKey, position } = await issueKey(store, clock, { orgId: required(values, 'org'), name: required(values, 'name'), mode });
        output = await settled({ key_id: keyId, api_key: apiKey }, position);
        break;
      }
      case 'key revoke': {
        const keyId = required(values, 'key');
        const { rows } = await db.pool.query(`SELECT org_id FROM ${READ_SCHEMA}.api_keys WHERE key_id = $1`, [keyId]);
        if (!rows[0]) throw new DomainError('not_found', `Key ${keyId} not found`);
        const handled = await revokeKey(store, clock, rows[0].org_id, keyId);
        output = await settled({ key_id: keyId, revoked: true }, handled.position);
        break;
      }
      case 'deposit': {
        const orgId = required(values, 'org');
        const reference = values.reference ?? null;
        const handled = await deposit(store, clock, orgId, amount!, reference);
        if (!handled.state.exists) throw new DomainError('not_found', 'Organization not found');
        const answer = { org_id: orgId, balance_usd: toUsd(handled.state.balance) };
        const made = handled.events.find((e) => e.type === 'FundsDeposited');
        if (made) {
          // Said before the wait: an operator who stops waiting knows the deposit stands.
          process.stderr.write(`recorded: deposit ${made.data.depositId} of ${toUsd(made.data.amount)} USD\n`);
          output = await settled(answer, handled.position);
          break;
        }
        // The reference's deposit is in the log already (an interrupted run retried): not paid again.
        const earlier = handled.state.deposits.get(reference!)!;
        process.stderr.write(`already recorded: deposit ${earlier.depositId} of ${toUsd(earlier.amount)} USD at ${earlier.at} (reference "${reference}"); not deposited again\n`);
        const logged = (await store.readStream(streamIdOfAccount(orgId))).find((e) => e.type === 'FundsDeposited' && (e.data as { depositId: string }).depositId === earlier.depositId);
        output = await settled({ ...answer, already_recorded: true }, logged?.position ?? null);
        break;
      }
      case 'member invite': {
        const orgId = required(values, 'org');
        const orgName = await organizationName(db.pool, orgId);
        if (orgName === null) throw new DomainError('not_found', `Organization ${orgId} not found`);
        const invited = await inviteMember(store, clock, systemClock, { orgId, email: required(values, 'email'), role, by: 'operator' });
        // The link points where people reach the dashboard: PUBLIC_URL, else the running service,
        // else where HOST and PORT say it listens (a wildcard address as the service says it: loopback).
        const listening = { address: db.config.host, port: db.config.port, family: db.config.host.includes(':') ? 'IPv6' : 'IPv4' };
        const base = db.config.publicUrl ?? readRunningService(db.config.dataDir)?.api ?? urlOf(listening)!;
        const url = inviteUrl(base, invited.token);
        // An unused invitation of the address (lost, expired) is replaced: its link no longer works.
        const replaced = invited.replaced.length > 0 ? { replaced_member_id: invited.replaced[0] } : {};
        output = await settled({ member_id: invited.memberId, invite_url: url, ...replaced }, invited.position);
        const mail = { smtpUrl: db.config.smtpUrl, from: db.config.mailFrom, outbox: path.join(db.config.dataDir, 'mail') };
        await sendInvitation(mail, { memberId: invited.memberId, email: invited.email, orgName, url }).catch((error: unknown) => {
          process.stderr.write(`warning: the invitation stands, but its e-mail could not be sent (${error instanceof Error ? error.message : String(error)}): give the person the link\n`);
        });
        break;
      }
      case 'video cancel': {
        const videoId = required(values, 'video');
        const handled = await cancelVideo(store, clock, videoId);
        output = await settled({ id: videoId, status: 'cancelled' }, handled.position);
        break;
      }
    }
    process.stdout.write(`${JSON.stringify(output)}\n`);
  } finally {
    await watcher.close();
    await store.close();
    await db.close();
  }
}

/** Events the projector parked: shown, or applied again through this code's projections. */
async function parked(command: string, values: Values): Promise<void> {
  const db = await connect('vidtrack-admin');
  const store = createEventStore(db.config, db.pool);
  try {
    if (command === 'parked list') {
      process.stdout.write(`${JSON.stringify({ parked: await listParked(db.pool, READ_SCHEMA, values.event) })}\n`);
      return;
    }
    if (values.event && (await listParked(db.pool, READ_SCHEMA, values.event)).length === 0) throw new DomainError('not_found', `no parked event ${values.event}`);
    const outcome = await retryParked(store, db.pool, projections, READ_SCHEMA, values.all ? undefined : values.event);
    process.stdout.write(`${JSON.stringify(outcome)}\n`);
    // Still failing is not a usage error, but a script must be able to tell.
    if (outcome.still_parked.length > 0) process.exitCode = 1;
  } finally {
    await store.close();
    await db.close();
  }
}

main().catch((error) => {
  if (error instanceof UsageError) {
    process.stderr.write(`error: ${error.message}\n${USAGE}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`${errorLine(error)}\n`);
    process.exitCode = 1;
  }
});
