// The admin CLI as an operator runs it: a child process on DATABASE_URL, one JSON object on
// stdout, errors on stderr with a non-zero exit. A projector runs against the same database
// (as the service would), so each command answers once the read models show its change.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/clock.ts';
import { createCollectorSet } from '../../src/collect/collectors.ts';
import { joinMember } from '../../src/commands/member-commands.ts';
import { hashApiKey } from '../../src/domain/api-key.ts';
import { trackVideo } from '../../src/commands/track.ts';
import { migrate } from '../../src/db/migrate.ts';
import { allMigrations } from '../../src/migrations.ts';
import { isLinkError, parseVideoLink } from '../../src/domain/links.ts';
import { PostgresEventStore } from '../../src/eventstore/postgres.ts';
import { READ_SCHEMA, projections } from '../../projections/index.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { CHECKPOINT_CHANNEL } from '../../projections/watcher.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';

const root = path.resolve(import.meta.dirname, '../..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let db: TestDatabase;
let store: PostgresEventStore;
let runner: ProjectionRunner;
let runnerError: unknown = null;
/** The CLI's DATA_DIR: invitation e-mails land in its `mail/` (no SMTP here). */
let dataDir: string;

before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vidtrack-admin-'));
  db = await createTestDatabase();
  await migrate(db.pool, allMigrations);
  store = new PostgresEventStore(db.pool);
  runner = new ProjectionRunner(store, db.pool, projections, { schema: READ_SCHEMA, notifyChannel: CHECKPOINT_CHANNEL });
  await runner.start((error) => (runnerError = error));
});
after(async () => {
  await runner.stop();
  await store.close();
  await db.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function admin(args: string[], databaseUrl = db.url, env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'scripts/admin.ts', ...args],
      { cwd: root, env: { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/**
 * A successful run: exit 0, one JSON object on stdout, and nothing on stderr but a deposit's
 * "recorded" line, so not the warning the CLI writes when it waited out its bound for the read
 * models (a clock here would fail on a busy machine, not on a CLI that waited in vain).
 */
async function ok(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Record<string, unknown>> {
  const run = await admin(args, db.url, env);
  assert.equal(run.code, 0, `admin ${args.join(' ')} failed: ${run.stderr} (projector: ${String(runnerError)})`);
  assert.equal(run.stderr.replace(/^recorded: deposit \S+ of [\d.]+ USD\n/, ''), '');
  assert.match(run.stdout, /^\{.*\}\n$/);
  return JSON.parse(run.stdout);
}

/** A refused run: non-zero exit, the message on stderr, nothing on stdout. */
async function refused(args: string[], message: RegExp, databaseUrl?: string): Promise<Run> {
  const run = await admin(args, databaseUrl);
  assert.notEqual(run.code, 0, `admin ${args.join(' ')} succeeded: ${run.stdout}`);
  assert.equal(run.stdout, '', `admin ${args.join(' ')} printed on stdout`);
  assert.match(run.stderr, message);
  return run;
}

async function newOrg(name = 'Acme'): Promise<string> {
  const out = await ok(['org', 'create', '--name', name, '--email', 'ops@acme.test']);
  return out.org_id as string;
}

describe('admin org create', () => {
  it('opens an organization and answers with its id', async () => {
    const out = await ok(['org', 'create', '--name', 'Acme Media', '--email', 'ops@acme.test', '--plan', 'pro']);
    assert.deepEqual(Object.keys(out), ['org_id']);
    assert.match(out.org_id as string, /^org_[0-9a-f]{20}$/);
    const { rows } = await db.pool.query(`SELECT name, email, plan, rate_limit FROM rm.organizations WHERE org_id = $1`, [out.org_id]);
    assert.deepEqual(rows, [{ name: 'Acme Media', email: 'ops@acme.test', plan: 'pro', rate_limit: null }]);
  });

  it('takes a custom rate limit for an enterprise plan, and as an override for any other (README); defaults to free', async () => {
    const enterprise = await ok(['org', 'create', '--name', 'Big', '--email', 'a@big.test', '--plan', 'enterprise', '--rate-limit', '5000']);
    const free = await ok(['org', 'create', '--name', 'Small', '--email', 'a@small.test']);
    const overridden = await ok(['org', 'create', '--name', 'Tiny', '--email', 'a@tiny.test', '--plan', 'pro', '--rate-limit', '10']);
    const { rows } = await db.pool.query(`SELECT org_id, plan, rate_limit FROM rm.organizations WHERE org_id = ANY($1) ORDER BY plan`, [[enterprise.org_id, free.org_id, overridden.org_id]]);
    assert.deepEqual(
      rows.map((r) => [r.org_id, r.plan, r.rate_limit]),
      [
        [enterprise.org_id, 'enterprise', 5000],
        [free.org_id, 'free', null],
        [overridden.org_id, 'pro', 10],
      ],
    );
  });
});

describe('admin key', () => {
  it('creates live and test keys with the right prefix, stored only as a hash', async () => {
    const orgId = await newOrg();
    const live = await ok(['key', 'create', '--org', orgId, '--name', 'production']);
    const test = await ok(['key', 'create', '--org', orgId, '--name', 'ci', '--mode', 'test']);
    assert.deepEqual(Object.keys(live), ['key_id', 'api_key']);
    assert.match(live.key_id as string, /^key_[0-9a-f]{20}$/);
    assert.match(live.api_key as string, /^vt_live_[A-Za-z0-9_-]{32}$/);
    assert.match(test.api_key as string, /^vt_test_[A-Za-z0-9_-]{32}$/);
    const { rows } = await db.pool.query(`SELECT key_id, key_hash, mode, name, revoked FROM rm.api_keys WHERE org_id = $1 ORDER BY mode`, [orgId]);
    assert.deepEqual(rows, [
      { key_id: live.key_id, key_hash: hashApiKey(live.api_key as string), mode: 'live', name: 'production', revoked: false },
      { key_id: test.key_id, key_hash: hashApiKey(test.api_key as string), mode: 'test', name: 'ci', revoked: false },
    ]);
    const { rows: logged } = await db.pool.query(`SELECT 1 FROM es.events WHERE data::text LIKE '%' || $1 || '%'`, [live.api_key]);
    assert.equal(logged.length, 0, 'the key itself is in the event log');
  });

  it('revokes a key: the read model shows it when the CLI answers; revoking again is harmless', async () => {
    const orgId = await newOrg();
    const key = await ok(['key', 'create', '--org', orgId, '--name', 'doomed']);
    assert.deepEqual(await ok(['key', 'revoke', '--key', key.key_id as string]), { key_id: key.key_id, revoked: true });
    const { rows } = await db.pool.query(`SELECT revoked FROM rm.api_keys WHERE key_id = $1`, [key.key_id]);
    assert.deepEqual(rows, [{ revoked: true }]);
    assert.deepEqual(await ok(['key', 'revoke', '--key', key.key_id as string]), { key_id: key.key_id, revoked: true });
    const { rows: events } = await db.pool.query(`SELECT 1 FROM es.events WHERE type = 'ApiKeyRevoked' AND data->>'keyId' = $1`, [key.key_id]);
    assert.equal(events.length, 1);
  });

  it('refuses an unknown key or organization', async () => {
    await refused(['key', 'revoke', '--key', 'key_00000000000000000000'], /Key key_0+ not found/);
    await refused(['key', 'create', '--org', 'org_nope', '--name', 'x'], /Organization not found/);
  });
});

describe('admin deposit', () => {
  it('adds exact amounts: 12.34, then 0.1 and 0.2 more', async () => {
    const orgId = await newOrg();
    assert.deepEqual(await ok(['deposit', '--org', orgId, '--amount', '12.34']), { org_id: orgId, balance_usd: 12.34 });
    assert.deepEqual(await ok(['deposit', '--org', orgId, '--amount', '0.1', '--reference', 'invoice 7']), { org_id: orgId, balance_usd: 12.44 });
    assert.deepEqual(await ok(['deposit', '--org', orgId, '--amount', '0.2']), { org_id: orgId, balance_usd: 12.64 });
    assert.deepEqual(await ok(['deposit', '--org', orgId, '--amount', '0.000001']), { org_id: orgId, balance_usd: 12.640001 });
    // Leading zeros are not significant: 25 USD, not "too large".
    assert.deepEqual(await ok(['deposit', '--org', orgId, '--amount', '0000000000025']), { org_id: orgId, balance_usd: 37.640001 });
    const { rows } = await db.pool.query(`SELECT balance FROM rm.usage WHERE org_id = $1`, [orgId]);
    assert.deepEqual(rows, [{ balance: '37640001' }]);
    const { rows: deposits } = await db.pool.query(`SELECT data FROM es.events WHERE type = 'FundsDeposited' AND data->>'orgId' = $1 ORDER BY position`, [orgId]);
    assert.deepEqual(
      deposits.map((r) => [r.data.amount, r.data.reference]),
      [
        [12_340_000, null],
        [100_000, 'invoice 7'],
        [200_000, null],
        [1, null],
        [25_000_000, null],
      ],
    );
  });

  it('refuses an unknown organization', async () => {
    await refused(['deposit', '--org', 'org_nope', '--amount', '5'], /Organization not found/);
  });
});

describe('admin video cancel', () => {
  it('cancels a monitoring video; a second cancel and an unknown video are refused', async () => {
    const orgId = await newOrg();
    const key = await ok(['key', 'create', '--org', orgId, '--name', 'k']);
    await ok(['deposit', '--org', orgId, '--amount', '1']);
    const link = parseVideoLink('https://www.youtube.com/watch?v=cliCancel01');
    assert.ok(!isLinkError(link));
    const collectors = createCollectorSet({ live: {}, fallbackToSimulator: true });
    const outcome = await trackVideo(
      { store, collectors, clock: systemClock, availableFunds: async () => 1_000_000 },
      { orgId, keyId: key.key_id as string, mode: 'live', link, durationDays: 1 },
    );
    assert.equal(outcome.kind, 'tracked');
    const videoId = (outcome as { videoId: string }).videoId;

    assert.deepEqual(await ok(['video', 'cancel', '--video', videoId]), { id: videoId, status: 'cancelled' });
    const { rows } = await db.pool.query(`SELECT status FROM rm.videos WHERE video_id = $1`, [videoId]);
    assert.deepEqual(rows, [{ status: 'cancelled' }]);
    await refused(['video', 'cancel', '--video', videoId], /Video is cancelled/);
    await refused(['video', 'cancel', '--video', '00000000-0000-4000-8000-000000000000'], /Video not found/);
  });
});

describe('admin with bad arguments', { concurrency: 6 }, () => {
  // None of these gets as far as the database: the URL below leads nowhere.
  const nowhere = 'postgres://127.0.0.1:1/nowhere';
  const cases: Array<[string, string[], RegExp]> = [
    ['no command', [], /no command given/],
    ['an unknown command', ['org', 'delete'], /unknown command "org delete"/],
    ['an unknown option', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--colour', 'red'], /Unknown option '--colour'/],
    ['a missing --name', ['org', 'create', '--email', 'a@b.c'], /--name is required/],
    ['an empty --name', ['org', 'create', '--name', ' ', '--email', 'a@b.c'], /--name is required/],
    ['a missing --email', ['org', 'create', '--name', 'X'], /--email is required/],
    ['--plan gold', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--plan', 'gold'], /--plan must be one of free, pro, enterprise/],
    ['an enterprise plan without --rate-limit', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--plan', 'enterprise'], /--plan enterprise needs --rate-limit/],
    ['--rate-limit 0', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--rate-limit', '0'], /--rate-limit must be a positive integer/],
    ['--rate-limit past a PostgreSQL integer', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--plan', 'enterprise', '--rate-limit', '3000000000'], /--rate-limit must be a positive integer, at most 2147483647/],
    ['--mode prod', ['key', 'create', '--org', 'org_x', '--name', 'k', '--mode', 'prod'], /--mode must be live or test/],
    ['a missing --org', ['key', 'create', '--name', 'k'], /--org is required/],
    ['a missing --key', ['key', 'revoke'], /--key is required/],
    ['a missing --video', ['video', 'cancel'], /--video is required/],
    ['a missing --amount', ['deposit', '--org', 'org_x'], /--amount is required/],
    ['--amount -5', ['deposit', '--org', 'org_x', '--amount', '-5'], /--amount/],
    ['--amount=-5', ['deposit', '--org', 'org_x', '--amount=-5'], /--amount must be a positive USD amount/],
    ['--amount abc', ['deposit', '--org', 'org_x', '--amount', 'abc'], /--amount must be a positive USD amount/],
    ['--amount 1.2345678', ['deposit', '--org', 'org_x', '--amount', '1.2345678'], /--amount must be a positive USD amount with at most 6 decimals/],
    ['--amount 0', ['deposit', '--org', 'org_x', '--amount', '0'], /--amount must be a positive USD amount/],
    ['--amount 999999999999 (past 2^53 micros)', ['deposit', '--org', 'org_x', '--amount', '999999999999'], /--amount is too large: a balance holds at most 1000000000 USD/],
    ['--amount 1000000000.000001', ['deposit', '--org', 'org_x', '--amount', '1000000000.000001'], /--amount is too large: a balance holds at most 1000000000 USD/],
    ['an empty --reference', ['deposit', '--org', 'org_x', '--amount', '1', '--reference', ' '], /--reference must not be empty/],
    ['a line break in --reference', ['deposit', '--org', 'org_x', '--amount', '1', '--reference', 'INV-1\n  OK: forged'], /--reference must not contain control characters/],
    // An option of another command would be dropped, and exit 0 read as done.
    ['a deposit and a threshold on org create', ['org', 'create', '--name', 'X', '--email', 'a@b.c', '--amount', '100', '--low-balance', '5'], /org create takes no --amount/],
    ['a plan on org set', ['org', 'set', '--org', 'org_x', '--low-balance', '5', '--plan', 'enterprise', '--rate-limit', '5000'], /org set takes no --plan/],
    ['a mode on deposit', ['deposit', '--org', 'org_x', '--amount', '1', '--mode', 'test'], /deposit takes no --mode/],
    ['--all on parked list', ['parked', 'list', '--all'], /parked list takes no --all/],
  ];
  for (const [what, args, message] of cases) {
    it(`refuses ${what} with a usage message and exit code 2`, async () => {
      const run = await refused(args, message, nowhere);
      assert.equal(run.code, 2);
      assert.match(run.stderr, /^usage:/m);
    });
  }

  it('refuses invalid values the domain checks, with exit code 1 and no usage text', async () => {
    const run = await refused(['org', 'create', '--name', 'X', '--email', 'not-an-address'], /email must be an e-mail address/);
    assert.equal(run.code, 1);
    assert.doesNotMatch(run.stderr, /usage:/);
  });

  it('--help prints the usage on stdout and exits 0', async () => {
    const run = await admin(['--help'], nowhere);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^usage:/);
    assert.match(run.stdout, /--rate-limit: requests per minute per key; required for enterprise, overrides free 60 \/ pro 300/);
  });
});

describe('admin member invite', () => {
  it('invites an address again while its invitation is unused: a new link, the first one stops working; a member is refused', async () => {
    const orgId = await newOrg('Invites');
    const first = await ok(['member', 'invite', '--org', orgId, '--email', 'Owner@Invites.test']);
    assert.deepEqual(Object.keys(first), ['member_id', 'invite_url']);
    // The e-mail was lost (or the week went by): the operator sends it again.
    const second = await ok(['member', 'invite', '--org', orgId, '--email', 'owner@invites.test']);
    assert.deepEqual(Object.keys(second), ['member_id', 'invite_url', 'replaced_member_id']);
    assert.equal(second.replaced_member_id, first.member_id);
    assert.notEqual(second.invite_url, first.invite_url);
    const { rows } = await db.pool.query(`SELECT member_id, status FROM rm.members WHERE org_id = $1 ORDER BY invited_at, member_id`, [orgId]);
    assert.deepEqual(new Map(rows.map((r) => [r.member_id, r.status])), new Map([[first.member_id, 'removed'], [second.member_id, 'invited']]));
    assert.ok(fs.existsSync(path.join(dataDir, 'mail', `invite-${second.member_id}.eml`)), 'the new link is e-mailed');
    const tokenOf = (url: unknown) => String(url).split('/invite/')[1]!;
    await assert.rejects(joinMember(store, systemClock, systemClock, { orgId, memberId: first.member_id as string, token: tokenOf(first.invite_url) }), /has been used or does not exist/);
    await joinMember(store, systemClock, systemClock, { orgId, memberId: second.member_id as string, token: tokenOf(second.invite_url) });
    const run = await refused(['member', 'invite', '--org', orgId, '--email', 'owner@invites.test'], /owner@invites\.test is already a member/);
    assert.equal(run.code, 1);
  });

  it('links to where the service listens when nothing else says: a wildcard HOST as loopback, as the service says it', async () => {
    const orgId = await newOrg('Wildcard');
    const invited = await ok(['member', 'invite', '--org', orgId, '--email', 'someone@wildcard.test'], { HOST: '0.0.0.0', PORT: '3456', PUBLIC_URL: '' });
    assert.match(String(invited.invite_url), /^http:\/\/127\.0\.0\.1:3456\/invite\//);
  });
});

describe('admin org set --low-balance', () => {
  it('records the balance.low threshold in the log, and "default" goes back to the default', async () => {
    const orgId = await newOrg('Thresholds');
    assert.deepEqual(await ok(['org', 'set', '--org', orgId, '--low-balance', '2.50']), { org_id: orgId, low_balance_usd: 2.5 });
    assert.deepEqual(await ok(['org', 'set', '--org', orgId, '--low-balance', 'default']), { org_id: orgId, low_balance_usd: null });
    const { rows } = await db.pool.query(`SELECT data FROM es.events WHERE stream_id = $1 AND type = 'LowBalanceThresholdSet' ORDER BY position`, [`account-${orgId}`]);
    assert.deepEqual(rows.map((r) => r.data.threshold), [2_500_000, null]);
    const run = await refused(['org', 'set', '--org', orgId, '--low-balance', 'lots'], /--low-balance must be/);
    assert.equal(run.code, 2);
  });
});
