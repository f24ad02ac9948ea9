import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideAccount, type AccountCommand } from '../../src/domain/account-decide.ts';
import { evolveAccount, initialAccountState, type AccountEvent, type AccountState } from '../../src/domain/account.ts';
import { MAX_BALANCE, toUsd } from '../../src/domain/money.ts';
import type { KeyMode, Plan } from '../../src/domain/platform.ts';
import { deciderSpec } from './decider-spec.ts';

const given = deciderSpec<AccountCommand, AccountEvent, AccountState>({ decide: decideAccount, evolve: evolveAccount, initialState: initialAccountState });

const now = new Date('2026-03-01T10:00:00.000Z');
const at = now.toISOString();
const orgId = 'org_1';

// ---- commands ---------------------------------------------------------------------------------

function openOrganization(overrides: Partial<Extract<AccountCommand, { type: 'OpenOrganization' }>> = {}): AccountCommand {
  return { type: 'OpenOrganization', orgId, name: 'Acme', email: 'ops@acme.test', plan: 'free', rateLimit: null, now, ...overrides };
}
const issueKey = (keyId: string, mode: KeyMode = 'live', name = 'ci key'): AccountCommand => ({ type: 'IssueKey', keyId, name, mode, keyHash: `sha256-of-${keyId}`, prefix: `vt_${mode}_abcd`, issuedBy: 'operator', now });
const revokeKey = (keyId: string): AccountCommand => ({ type: 'RevokeKey', keyId, now });
const deposit = (amount: number, depositId = 'dep_1', reference: string | null = null): AccountCommand => ({ type: 'Deposit', depositId, amount, reference, now });
const charge = (snapshotsRecorded: number, chargeId = 'chg_1'): AccountCommand => ({ type: 'Charge', chargeId, snapshotsRecorded, now });

// ---- events -----------------------------------------------------------------------------------

function opened(plan: Plan = 'free', rateLimit: number | null = null): AccountEvent {
  return { type: 'OrganizationOpened', data: { orgId, name: 'Acme', email: 'ops@acme.test', plan, rateLimit, at } };
}
const keyIssued = (keyId: string, mode: KeyMode = 'live', name = 'ci key'): AccountEvent => ({
  type: 'ApiKeyIssued',
  data: { orgId, keyId, name, mode, keyHash: `sha256-of-${keyId}`, prefix: `vt_${mode}_abcd`, issuedBy: 'operator', at },
});
const keyRevoked = (keyId: string): AccountEvent => ({ type: 'ApiKeyRevoked', data: { orgId, keyId, at } });
const deposited = (amount: number, depositId = 'dep_1', reference: string | null = null): AccountEvent => ({
  type: 'FundsDeposited',
  data: { orgId, depositId, amount, reference, at },
});
const charged = (snapshots: number, snapshotsChargedTotal: number, chargeId = 'chg_1'): AccountEvent => ({
  type: 'UsageCharged',
  data: { orgId, chargeId, snapshots, amount: snapshots * 15_000, snapshotsChargedTotal, at },
});

function money(state: AccountState) {
  assert.ok(state.exists);
  return { balance: state.balance, totalCharged: state.totalCharged, snapshotsCharged: state.snapshotsCharged };
}

// ---- specs ------------------------------------------------------------------------------------

describe('OpenOrganization', () => {
  it('opens an organization with an empty account', () => {
    const { state } = given([]).when(openOrganization()).then([opened()]);
    assert.deepStrictEqual(state, { exists: true, orgId, plan: 'free', keys: new Map(), balance: 0, totalCharged: 0, snapshotsCharged: 0, deposits: new Map() });
  });

  it('opens a pro organization, and an enterprise one with its custom rate limit', () => {
    given([]).when(openOrganization({ plan: 'pro' })).then([opened('pro')]);
    given([]).when(openOrganization({ plan: 'enterprise', rateLimit: 5000 })).then([opened('enterprise', 5000)]);
  });

  it('lets a free or pro organization carry a rate limit override', () => {
    given([]).when(openOrganization({ plan: 'pro', rateLimit: 500 })).then([opened('pro', 500)]);
  });

  it('refuses an enterprise plan without a rate limit', () => {
    given([]).when(openOrganization({ plan: 'enterprise', rateLimit: null })).then({ code: 'invalid_argument', message: 'an enterprise plan needs a custom rate limit' });
  });

  it('refuses a rate limit the read models cannot hold (PostgreSQL integer), and takes the largest they can', () => {
    given([]).when(openOrganization({ plan: 'enterprise', rateLimit: 2 ** 31 })).then({ code: 'invalid_argument', message: 'rate limit must be at most 2147483647' });
    given([]).when(openOrganization({ plan: 'enterprise', rateLimit: 2 ** 31 - 1 })).then([opened('enterprise', 2 ** 31 - 1)]);
  });

  for (const rateLimit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`refuses a rate limit of ${rateLimit}`, () => {
      given([]).when(openOrganization({ plan: 'enterprise', rateLimit })).then({ code: 'invalid_argument', message: 'rate limit must be a positive integer' });
    });
  }

  for (const name of ['', '   ']) {
    it(`refuses the name ${JSON.stringify(name)}`, () => {
      given([]).when(openOrganization({ name })).then({ code: 'invalid_argument', message: 'name must not be empty' });
    });
  }

  for (const email of ['', 'acme', 'ops@', '@acme.test', 'ops@@acme.test', 'o ps@acme.test', 'ops@acme test']) {
    it(`refuses the e-mail ${JSON.stringify(email)}`, () => {
      given([]).when(openOrganization({ email })).then({ code: 'invalid_argument', message: 'email must be an e-mail address' });
    });
  }

  it('refuses to open the same organization twice', () => {
    given([opened()]).when(openOrganization()).then('already_exists');
  });
});

describe('commands on an organization that does not exist', () => {
  for (const command of [issueKey('k1'), revokeKey('k1'), deposit(1), charge(1)]) {
    it(`refuses ${command.type} with not_found`, () => {
      given([]).when(command).then({ code: 'not_found', message: 'Organization not found' });
    });
  }
});

describe('IssueKey', () => {
  it('issues live and test keys, storing only the hash', () => {
    const { state } = given([opened()]).when(issueKey('k1', 'live')).then([keyIssued('k1', 'live')]);
    assert.ok(state.exists);
    assert.deepStrictEqual([...state.keys], [['k1', false]]);
    given([opened(), keyIssued('k1')]).when(issueKey('k2', 'test')).then([keyIssued('k2', 'test')]);
  });

  it('refuses a key id already issued, revoked or not', () => {
    given([opened(), keyIssued('k1')]).when(issueKey('k1')).then('already_exists');
    given([opened(), keyIssued('k1'), keyRevoked('k1')]).when(issueKey('k1')).then('already_exists');
  });

  it('refuses an empty key name', () => {
    given([opened()]).when(issueKey('k1', 'live', ' ')).then({ code: 'invalid_argument', message: 'name must not be empty' });
  });
});

describe('RevokeKey', () => {
  it('revokes an active key', () => {
    const { state } = given([opened(), keyIssued('k1'), keyIssued('k2')]).when(revokeKey('k1')).then([keyRevoked('k1')]);
    assert.ok(state.exists);
    assert.deepStrictEqual([...state.keys], [['k1', true], ['k2', false]]);
  });

  it('is idempotent: revoking a revoked key changes nothing', () => {
    given([opened(), keyIssued('k1'), keyRevoked('k1')]).when(revokeKey('k1')).thenNothing();
  });

  it('refuses an unknown key', () => {
    given([opened(), keyIssued('k1')]).when(revokeKey('k9')).then({ code: 'not_found', message: 'Key k9 not found' });
  });
});

describe('Deposit', () => {
  it('deposits a positive integer amount of micros and raises the balance', () => {
    const { state } = given([opened()]).when(deposit(10_800_000, 'dep_1', 'invoice 42')).then([deposited(10_800_000, 'dep_1', 'invoice 42')]);
    assert.deepStrictEqual(money(state), { balance: 10_800_000, totalCharged: 0, snapshotsCharged: 0 });
  });

  it('accepts the smallest amount, 1 micro', () => {
    given([opened()]).when(deposit(1)).then([deposited(1)]);
  });

  it('adds deposits up exactly', () => {
    const { state } = given([opened(), deposited(100_000, 'd1'), deposited(200_000, 'd2')]).when(deposit(300_000, 'd3')).then([deposited(300_000, 'd3')]);
    assert.equal(money(state).balance, 600_000);
    assert.equal(toUsd(money(state).balance), 0.6); // 0.1 + 0.2 + 0.3 in floats is 0.6000000000000001
  });

  it('takes the balance up to 1,000,000,000 USD, not a micro past it: beyond 2^53 micros sums round silently', () => {
    given([opened(), deposited(MAX_BALANCE - 1, 'd1')]).when(deposit(1, 'd2')).then([deposited(1, 'd2')]);
    given([opened(), deposited(MAX_BALANCE - 1, 'd1')])
      .when(deposit(2, 'd2'))
      .then({ code: 'invalid_argument', message: 'the balance may hold at most 1000000000 USD; it holds 999999999.999999 USD' });
    given([opened()]).when(deposit(Number.MAX_SAFE_INTEGER)).then({ code: 'invalid_argument', message: 'the balance may hold at most 1000000000 USD; it holds 0 USD' });
  });

  it('applies a deposit once per reference: the same deposit again (a retry) changes nothing', () => {
    const { state } = given([opened(), deposited(25_000_000, 'd1', 'INV-1')]).when(deposit(25_000_000, 'd2', 'INV-1')).thenNothing();
    assert.equal(money(state).balance, 25_000_000);
    assert.ok(state.exists);
    assert.deepStrictEqual(state.deposits.get('INV-1'), { depositId: 'd1', amount: 25_000_000, at });
  });

  it('refuses a reference already used by a deposit of another amount, naming that deposit', () => {
    given([opened(), deposited(25_000_000, 'd1', 'INV-1')])
      .when(deposit(30_000_000, 'd2', 'INV-1'))
      .then({ code: 'already_exists', message: `reference "INV-1" is already deposit d1 of 25 USD (at ${at}); a deposit of 30 USD needs a reference of its own` });
  });

  it('takes other references, and any number of deposits without one', () => {
    given([opened(), deposited(1, 'd1', 'INV-1')]).when(deposit(1, 'd2', 'INV-2')).then([deposited(1, 'd2', 'INV-2')]);
    given([opened(), deposited(1, 'd1')]).when(deposit(1, 'd2')).then([deposited(1, 'd2')]);
  });

  it('keeps counting deposits logged before references were checked that share one; the first keeps the reference', () => {
    const { state } = given([opened(), deposited(1_000_000, 'd1', 'top-up'), deposited(2_000_000, 'd2', 'top-up')]).when(deposit(1_000_000, 'd3', 'top-up')).thenNothing();
    assert.equal(money(state).balance, 3_000_000);
  });

  for (const amount of [0, -1, -15_000, 0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1]) {
    it(`refuses ${amount} micros`, () => {
      given([opened()]).when(deposit(amount)).then({ code: 'invalid_argument', message: 'deposit amount must be positive' });
    });
  }
});

describe('Charge', () => {
  it('bills the live snapshots recorded so far, at 15 000 micros each', () => {
    const { state } = given([opened(), deposited(10_800_000)]).when(charge(24)).then([charged(24, 24)]);
    assert.deepStrictEqual(money(state), { balance: 10_440_000, totalCharged: 360_000, snapshotsCharged: 24 });
  });

  it('bills only the snapshots not yet charged', () => {
    const { state } = given([opened(), deposited(10_800_000), charged(24, 24, 'c1')]).when(charge(31, 'c2')).then([charged(7, 31, 'c2')]);
    assert.deepStrictEqual(money(state), { balance: 10_800_000 - 31 * 15_000, totalCharged: 465_000, snapshotsCharged: 31 });
  });

  it('is idempotent: a second charger that saw the same count bills nothing', () => {
    given([opened(), deposited(1_000_000), charged(10, 10, 'c1')]).when(charge(10, 'c2')).thenNothing();
  });

  it('bills nothing for a stale, lower count', () => {
    given([opened(), deposited(1_000_000), charged(10, 10, 'c1')]).when(charge(8, 'c2')).thenNothing();
  });

  it('bills nothing when nothing has been recorded', () => {
    given([opened()]).when(charge(0)).thenNothing();
  });

  it('bills 0.015 USD for one snapshot, exactly', () => {
    const { state } = given([opened(), deposited(1_000_000)]).when(charge(1)).then([charged(1, 1)]);
    assert.equal(toUsd(money(state).totalCharged), 0.015);
    assert.equal(toUsd(money(state).balance), 0.985);
  });

  it('keeps exact running totals in micros over many charges (no float drift)', () => {
    let events: AccountEvent[] = [opened(), deposited(10_800_000)];
    let recorded = 0;
    for (let hour = 1; hour <= 720; hour++) {
      recorded += 1;
      const { state } = given(events).when(charge(recorded, `c${hour}`)).then([charged(1, recorded, `c${hour}`)]);
      events = [...events, charged(1, recorded, `c${hour}`)];
      assert.equal(money(state).totalCharged, hour * 15_000);
    }
    const { state } = given(events).when(charge(recorded, 'again')).thenNothing();
    assert.deepStrictEqual(money(state), { balance: 0, totalCharged: 10_800_000, snapshotsCharged: 720 });
    assert.equal(toUsd(money(state).totalCharged), 10.8);
  });

  it('may take the balance below zero: usage already collected is owed', () => {
    const { state } = given([opened(), deposited(15_000)]).when(charge(3)).then([charged(3, 3)]);
    assert.deepStrictEqual(money(state), { balance: -30_000, totalCharged: 45_000, snapshotsCharged: 3 });
  });

  it('keeps deposits and charges apart in the totals', () => {
    const { state } = given([opened(), deposited(500_000, 'd1'), charged(10, 10, 'c1'), deposited(250_000, 'd2')])
      .when(charge(12, 'c2'))
      .then([charged(2, 12, 'c2')]);
    assert.deepStrictEqual(money(state), { balance: 750_000 - 12 * 15_000, totalCharged: 180_000, snapshotsCharged: 12 });
  });
});
