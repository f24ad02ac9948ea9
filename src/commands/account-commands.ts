// Organization, key and money commands, issued by the admin CLI and the charge job.
import type { Clock } from '../clock.ts';
import { streamIdOfAccount } from '../domain/account.ts';
import { hashApiKey, keyPrefix, newApiKey } from '../domain/api-key.ts';
import type { Micros } from '../domain/money.ts';
import type { KeyMode, Plan } from '../domain/platform.ts';
import type { EventStore } from '../eventstore/port.ts';
import { accountDecider } from './deciders.ts';
import { handleCommand } from './handle.ts';
import { newId } from './ids.ts';

export async function openOrganization(store: EventStore, clock: Clock, input: { name: string; email: string; plan: Plan; rateLimit: number | null }) {
  const orgId = `org_${newId().replaceAll('-', '').slice(0, 20)}`;
  const handled = await handleCommand(store, streamIdOfAccount(orgId), accountDecider, { type: 'OpenOrganization', orgId, ...input, now: clock.now() });
  return { orgId, position: handled.position };
}

/** The key's value exists only in this function's answer: the log keeps its SHA-256 hash. */
/** `issuedBy`: the member who created it in the dashboard; the admin CLI's keys are the operator's. */
export async function issueKey(store: EventStore, clock: Clock, input: { orgId: string; name: string; mode: KeyMode; issuedBy?: string }) {
  const keyId = `key_${newId().replaceAll('-', '').slice(0, 20)}`;
  const apiKey = newApiKey(input.mode);
  const handled = await handleCommand(store, streamIdOfAccount(input.orgId), accountDecider, {
    type: 'IssueKey',
    keyId,
    name: input.name,
    mode: input.mode,
    keyHash: hashApiKey(apiKey),
    prefix: keyPrefix(apiKey),
    issuedBy: input.issuedBy ?? 'operator',
    now: clock.now(),
  });
  return { keyId, apiKey, position: handled.position };
}

export function revokeKey(store: EventStore, clock: Clock, orgId: string, keyId: string) {
  return handleCommand(store, streamIdOfAccount(orgId), accountDecider, { type: 'RevokeKey', keyId, now: clock.now() });
}

export function deposit(store: EventStore, clock: Clock, orgId: string, amount: Micros, reference: string | null) {
  return handleCommand(store, streamIdOfAccount(orgId), accountDecider, { type: 'Deposit', depositId: newId(), amount, reference, now: clock.now() });
}

export function charge(store: EventStore, clock: Clock, orgId: string, snapshotsRecorded: number) {
  return handleCommand(store, streamIdOfAccount(orgId), accountDecider, { type: 'Charge', chargeId: newId(), snapshotsRecorded, now: clock.now() });
}

/** The available balance below which `balance.low` is sent; null: the default (next 24 h of active videos). */
export function setLowBalanceThreshold(store: EventStore, clock: Clock, orgId: string, threshold: Micros | null) {
  return handleCommand(store, streamIdOfAccount(orgId), accountDecider, { type: 'SetLowBalanceThreshold', threshold, now: clock.now() });
}
