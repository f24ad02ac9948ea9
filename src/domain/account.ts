// Account stream (`account-<orgId>`): the organization, its keys, its money.
import type { Micros } from './money.ts';
import type { KeyMode, Plan } from './platform.ts';

export type OrganizationOpened = {
  type: 'OrganizationOpened';
  data: { orgId: string; name: string; email: string; plan: Plan; rateLimit: number | null; at: string };
};
export type ApiKeyIssued = {
  type: 'ApiKeyIssued';
  /** Only the SHA-256 hash of the key is ever stored. */
  data: {
    orgId: string;
    keyId: string;
    name: string;
    mode: KeyMode;
    keyHash: string;
    at: string;
    /** Who made it: a member id, or 'operator' (absent on keys issued before the dashboard). */
    issuedBy?: string;
    /** The key's first characters, shown in the dashboard; never enough to use it. */
    prefix?: string;
  };
};
export type ApiKeyRevoked = { type: 'ApiKeyRevoked'; data: { orgId: string; keyId: string; at: string } };
export type FundsDeposited = {
  type: 'FundsDeposited';
  data: { orgId: string; depositId: string; amount: Micros; reference: string | null; at: string };
};
export type UsageCharged = {
  type: 'UsageCharged';
  /**
   * Bills `snapshots` newly recorded live snapshots. `snapshotsChargedTotal` is the running
   * count after this charge: a second charger that saw the same count finds nothing left to bill.
   */
  data: { orgId: string; chargeId: string; snapshots: number; amount: Micros; snapshotsChargedTotal: number; at: string };
};

/**
 * The available balance below which `balance.low` is sent (webhooks); null: the default, the
 * cost of the next 24 h of the organization's active videos.
 */
export type LowBalanceThresholdSet = { type: 'LowBalanceThresholdSet'; data: { orgId: string; threshold: Micros | null; at: string } };

export type AccountEvent = OrganizationOpened | ApiKeyIssued | ApiKeyRevoked | FundsDeposited | UsageCharged | LowBalanceThresholdSet;

export type AccountState =
  | { exists: false }
  | {
      exists: true;
      orgId: string;
      plan: Plan;
      /** key id -> revoked? */
      keys: ReadonlyMap<string, boolean>;
      balance: Micros;
      totalCharged: Micros;
      snapshotsCharged: number;
      /**
       * reference -> the deposit that carried it first: a deposit names its reference (an
       * invoice, a transfer) so that retrying it does not pay twice. One entry per referenced deposit.
       */
      deposits: ReadonlyMap<string, RecordedDeposit>;
    };

export type RecordedDeposit = { depositId: string; amount: Micros; at: string };

export const initialAccountState: AccountState = { exists: false };

export function streamIdOfAccount(orgId: string): string {
  return `account-${orgId}`;
}

export function evolveAccount(state: AccountState, event: AccountEvent): AccountState {
  if (event.type === 'OrganizationOpened') {
    return { exists: true, orgId: event.data.orgId, plan: event.data.plan, keys: new Map(), balance: 0, totalCharged: 0, snapshotsCharged: 0, deposits: new Map() };
  }
  if (!state.exists) return state;
  switch (event.type) {
    case 'ApiKeyIssued':
      return { ...state, keys: new Map(state.keys).set(event.data.keyId, false) };
    case 'ApiKeyRevoked':
      return { ...state, keys: new Map(state.keys).set(event.data.keyId, true) };
    case 'FundsDeposited': {
      const { reference, depositId, amount, at } = event.data;
      // Deposits made before references were checked may share one: the first keeps it.
      const deposits = reference === null || state.deposits.has(reference) ? state.deposits : new Map(state.deposits).set(reference, { depositId, amount, at });
      return { ...state, balance: state.balance + amount, deposits };
    }
    case 'UsageCharged':
      return {
        ...state,
        balance: state.balance - event.data.amount,
        totalCharged: state.totalCharged + event.data.amount,
        snapshotsCharged: event.data.snapshotsChargedTotal,
      };
    case 'LowBalanceThresholdSet':
      return state;
  }
}
