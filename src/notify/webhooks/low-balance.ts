// balance.low from the log: thresholds set and deposits made (which arm the alert again) are
// read from the page, live snapshots (which spend) make an organization a candidate, and the
// decision and its delivery are recorded in the reactor's transaction, so a crossing is told
// once whatever restarts.
import type { ClientBase } from 'pg';
import { fallsBelow, lowBalanceThreshold } from '../../domain/low-balance.ts';
import { toUsd, type Micros } from '../../domain/money.ts';
import type { RecordedEvent } from '../../eventstore/port.ts';
import type { UsageRow, WebhookEndpointRow } from '../../../projections/queries.ts';
import { deliveryIdOf, type NewDelivery } from './deliveries.ts';
import { bodyOf } from './payloads.ts';

export interface BalanceChanges {
  /** Thresholds set in the page (the last per organization wins). */
  thresholds: Map<string, Micros | null>;
  /** Organizations that received a deposit. */
  deposits: Set<string>;
  /** Organizations whose live snapshots spent, with the last such event. */
  spenders: Map<string, RecordedEvent>;
}

export function balanceChangesOf(page: readonly RecordedEvent[]): BalanceChanges {
  const changes: BalanceChanges = { thresholds: new Map(), deposits: new Set(), spenders: new Map() };
  for (const event of page) {
    const data = event.data as { orgId: string; threshold?: Micros | null; mode?: string };
    if (event.type === 'LowBalanceThresholdSet') changes.thresholds.set(data.orgId, data.threshold ?? null);
    else if (event.type === 'FundsDeposited') changes.deposits.add(data.orgId);
    else if (event.type === 'SnapshotRecorded' && data.mode === 'live') changes.spenders.set(data.orgId, event);
  }
  return changes;
}

/** An organization to look at: its usage as the read model has it, and its live endpoints subscribed to balance.low. */
export interface BalanceCandidate {
  orgId: string;
  usage: UsageRow;
  endpoints: WebhookEndpointRow[];
  event: RecordedEvent;
}

/** Inside the reactor's transaction: arms, records thresholds, and answers the balance.low deliveries due. */
export async function watchBalances(client: ClientBase, changes: BalanceChanges, candidates: readonly BalanceCandidate[], now: Date): Promise<NewDelivery[]> {
  if (changes.thresholds.size > 0) {
    await client.query(
      `INSERT INTO webhooks.balance_watch (org_id, threshold, armed) SELECT o, t, true FROM unnest($1::text[], $2::bigint[]) AS x(o, t)
       ON CONFLICT (org_id) DO UPDATE SET threshold = excluded.threshold, armed = true`,
      [[...changes.thresholds.keys()], [...changes.thresholds.values()]],
    );
  }
  if (changes.deposits.size > 0) {
    await client.query(
      `INSERT INTO webhooks.balance_watch (org_id, armed) SELECT unnest($1::text[]), true ON CONFLICT (org_id) DO UPDATE SET armed = true`,
      [[...changes.deposits]],
    );
  }
  if (candidates.length === 0) return [];
  const { rows } = await client.query<{ org_id: string; threshold: string | null; armed: boolean }>(
    `SELECT org_id, threshold::text, armed FROM webhooks.balance_watch WHERE org_id = ANY($1::text[]) FOR UPDATE`,
    [candidates.map((c) => c.orgId)],
  );
  const watched = new Map(rows.map((r) => [r.org_id, r]));
  const deliveries: NewDelivery[] = [];
  const told: string[] = [];
  for (const candidate of candidates) {
    const row = watched.get(candidate.orgId);
    const threshold = lowBalanceThreshold(row?.threshold == null ? null : Number(row.threshold), candidate.usage.activeLive);
    const available = candidate.usage.balance - candidate.usage.uncharged;
    if (!fallsBelow(available, threshold, row?.armed ?? true)) continue;
    told.push(candidate.orgId);
    const timestamp = (candidate.event.data as { snapshotTime: string }).snapshotTime;
    const body = bodyOf('balance.low', timestamp, {
      available_balance_usd: toUsd(available),
      balance_usd: toUsd(candidate.usage.balance),
      uncharged_usage_usd: toUsd(candidate.usage.uncharged),
      threshold_usd: toUsd(threshold),
      active_videos: candidate.usage.activeLive,
    });
    for (const endpoint of candidate.endpoints) {
      deliveries.push({
        deliveryId: deliveryIdOf(candidate.event.id, 'balance.low', endpoint.endpoint_id),
        endpointId: endpoint.endpoint_id,
        orgId: candidate.orgId,
        eventId: candidate.event.id,
        eventType: 'balance.low',
        videoId: null,
        body,
        createdAt: now,
      });
    }
  }
  if (told.length > 0) {
    await client.query(
      `INSERT INTO webhooks.balance_watch (org_id, armed) SELECT unnest($1::text[]), false ON CONFLICT (org_id) DO UPDATE SET armed = false`,
      [told],
    );
  }
  return deliveries;
}
