// Account commands and the pure decide function over the account stream's state.
import { DomainError } from './errors.ts';
import { MAX_BALANCE, SNAPSHOT_PRICE, toUsd, type Micros } from './money.ts';
import type { KeyMode, Plan } from './platform.ts';
import type { AccountEvent, AccountState } from './account.ts';
import { MAX_RATE_LIMIT } from './storable.ts';

export type AccountCommand =
  | { type: 'OpenOrganization'; orgId: string; name: string; email: string; plan: Plan; rateLimit: number | null; now: Date }
  | { type: 'IssueKey'; keyId: string; name: string; mode: KeyMode; keyHash: string; prefix: string; issuedBy: string; now: Date }
  | { type: 'RevokeKey'; keyId: string; now: Date }
  | { type: 'Deposit'; depositId: string; amount: Micros; reference: string | null; now: Date }
  /** `snapshotsRecorded`: live snapshots recorded for the organization so far, all time. */
  | { type: 'Charge'; chargeId: string; snapshotsRecorded: number; now: Date }
  /** null: back to the default threshold. */
  | { type: 'SetLowBalanceThreshold'; threshold: Micros | null; now: Date };

export function decideAccount(command: AccountCommand, state: AccountState): AccountEvent[] {
  const at = command.now.toISOString();
  if (command.type === 'OpenOrganization') {
    if (state.exists) throw new DomainError('already_exists', `Organization ${command.orgId} already exists`);
    if (!command.name.trim()) throw new DomainError('invalid_argument', 'name must not be empty');
    if (!/^[^@\s]+@[^@\s]+$/.test(command.email)) throw new DomainError('invalid_argument', 'email must be an e-mail address');
    if (command.plan === 'enterprise' && command.rateLimit === null) {
      throw new DomainError('invalid_argument', 'an enterprise plan needs a custom rate limit');
    }
    if (command.rateLimit !== null && !(Number.isInteger(command.rateLimit) && command.rateLimit > 0)) {
      throw new DomainError('invalid_argument', 'rate limit must be a positive integer');
    }
    if (command.rateLimit !== null && command.rateLimit > MAX_RATE_LIMIT) {
      throw new DomainError('invalid_argument', `rate limit must be at most ${MAX_RATE_LIMIT}`);
    }
    const { orgId, name, email, plan, rateLimit } = command;
    return [{ type: 'OrganizationOpened', data: { orgId, name, email, plan, rateLimit, at } }];
  }
  if (!state.exists) throw new DomainError('not_found', 'Organization not found');
  const { orgId } = state;

  switch (command.type) {
    case 'IssueKey':
      if (state.keys.has(command.keyId)) throw new DomainError('already_exists', `Key ${command.keyId} already exists`);
      if (!command.name.trim()) throw new DomainError('invalid_argument', 'name must not be empty');
      return [{ type: 'ApiKeyIssued', data: { orgId, keyId: command.keyId, name: command.name, mode: command.mode, keyHash: command.keyHash, prefix: command.prefix, issuedBy: command.issuedBy, at } }];
    case 'RevokeKey': {
      const revoked = state.keys.get(command.keyId);
      if (revoked === undefined) throw new DomainError('not_found', `Key ${command.keyId} not found`);
      if (revoked) return [];
      return [{ type: 'ApiKeyRevoked', data: { orgId, keyId: command.keyId, at } }];
    }
    case 'Deposit':
      if (!Number.isSafeInteger(command.amount) || command.amount <= 0) {
        throw new DomainError('invalid_argument', 'deposit amount must be positive');
      }
      if (command.reference !== null) {
        // A reference names one deposit: the same one again (a retry) changes nothing.
        const recorded = state.deposits.get(command.reference);
        if (recorded && recorded.amount === command.amount) return [];
        if (recorded) {
          throw new DomainError(
            'already_exists',
            `reference "${command.reference}" is already deposit ${recorded.depositId} of ${toUsd(recorded.amount)} USD (at ${recorded.at}); a deposit of ${toUsd(command.amount)} USD needs a reference of its own`,
          );
        }
      }
      if (state.balance + command.amount > MAX_BALANCE) {
        throw new DomainError('invalid_argument', `the balance may hold at most ${toUsd(MAX_BALANCE)} USD; it holds ${toUsd(state.balance)} USD`);
      }
      return [{ type: 'FundsDeposited', data: { orgId, depositId: command.depositId, amount: command.amount, reference: command.reference, at } }];
    case 'SetLowBalanceThreshold':
      if (command.threshold !== null && !(Number.isSafeInteger(command.threshold) && command.threshold >= 0)) {
        throw new DomainError('invalid_argument', 'the low-balance threshold must be a non-negative amount');
      }
      return [{ type: 'LowBalanceThresholdSet', data: { orgId, threshold: command.threshold, at } }];
    case 'Charge': {
      const snapshots = command.snapshotsRecorded - state.snapshotsCharged;
      if (snapshots <= 0) return [];
      const amount: Micros = snapshots * SNAPSHOT_PRICE;
      return [
        {
          type: 'UsageCharged',
          data: { orgId, chargeId: command.chargeId, snapshots, amount, snapshotsChargedTotal: command.snapshotsRecorded, at },
        },
      ];
    }
  }
}
