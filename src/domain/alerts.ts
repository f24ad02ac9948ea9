// Alerts stream (`alerts-<orgId>`): an organization's metric alerts, and when one fires. An
// alert watches one video or all of them (of its key's mode) for a metric meeting a condition;
// it fires when a new snapshot meets the condition and the one before did not (once per
// crossing). Counts are bigints carried as decimal strings: never floats beyond 2^53.
import { DomainError } from './errors.ts';
import type { KeyMode } from './platform.ts';

export const ALERT_METRICS = ['views', 'likes', 'comments', 'shares', 'saves', 'retweets', 'replies'] as const;
export type AlertMetric = (typeof ALERT_METRICS)[number];

/** `crosses` and `grows_per_hour` are counts (decimal strings); `grows_pct_24h` a percentage (decimal string, up to 6 decimals). */
export type AlertCondition = { crosses: string } | { grows_per_hour: string } | { grows_pct_24h: string };

export const MAX_ALERTS_PER_ORGANIZATION = 100;

export type MetricAlertCreated = {
  type: 'MetricAlertCreated';
  /** `videoId`: one video, or 'all' of the organization's videos of `mode`. */
  data: { orgId: string; alertId: string; mode: KeyMode; videoId: string; metric: AlertMetric; condition: AlertCondition; at: string };
};
export type MetricAlertDeleted = { type: 'MetricAlertDeleted'; data: { orgId: string; alertId: string; at: string } };
export type AlertEvent = MetricAlertCreated | MetricAlertDeleted;

export type AlertsState = ReadonlySet<string>;
export const initialAlertsState: AlertsState = new Set();

export function streamIdOfAlerts(orgId: string): string {
  return `alerts-${orgId}`;
}

export type AlertCommand =
  | { type: 'CreateAlert'; orgId: string; alertId: string; mode: KeyMode; videoId: string; metric: AlertMetric; condition: AlertCondition; now: Date }
  | { type: 'DeleteAlert'; orgId: string; alertId: string; now: Date };

export function evolveAlerts(state: AlertsState, event: AlertEvent): AlertsState {
  const next = new Set(state);
  if (event.type === 'MetricAlertCreated') next.add(event.data.alertId);
  else next.delete(event.data.alertId);
  return next;
}

export function decideAlerts(command: AlertCommand, state: AlertsState): AlertEvent[] {
  const at = command.now.toISOString();
  if (command.type === 'CreateAlert') {
    if (state.has(command.alertId)) throw new DomainError('already_exists', `Alert ${command.alertId} already exists`);
    if (state.size >= MAX_ALERTS_PER_ORGANIZATION) throw new DomainError('limit_reached', `An organization has at most ${MAX_ALERTS_PER_ORGANIZATION} alerts`);
    const { orgId, alertId, mode, videoId, metric, condition } = command;
    return [{ type: 'MetricAlertCreated', data: { orgId, alertId, mode, videoId, metric, condition, at } }];
  }
  if (!state.has(command.alertId)) throw new DomainError('not_found', 'Alert not found');
  return [{ type: 'MetricAlertDeleted', data: { orgId: command.orgId, alertId: command.alertId, at } }];
}

// ---- when an alert fires ----------------------------------------------------------------

/** One snapshot's value of the alert's metric. */
export interface MetricPoint {
  time: number;
  value: bigint;
}

const PCT_SCALE = 1_000_000n;
const HOUR_MS = 3_600_000n;
const DAY_MS = 24 * 3_600_000;

/** A percentage as an integer scaled by 10^6 ("12.5" -> 12500000n). */
export function scaledPercent(text: string): bigint {
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole!) * PCT_SCALE + BigInt(fraction.padEnd(6, '0').slice(0, 6) || '0');
}

/** Whether the condition holds at `points[at]` (points in time order, each from one snapshot). */
function holds(condition: AlertCondition, points: readonly MetricPoint[], at: number): boolean {
  const point = points[at];
  if (!point) return false;
  if ('crosses' in condition) return point.value >= BigInt(condition.crosses);
  if ('grows_per_hour' in condition) {
    const before = points[at - 1];
    if (!before || point.time <= before.time) return false;
    // (growth per ms) * hour >= N, in integers: growth * HOUR_MS >= N * elapsed ms.
    return (point.value - before.value) * HOUR_MS >= BigInt(condition.grows_per_hour) * BigInt(point.time - before.time);
  }
  // The newest value at least 24 h older than this one.
  let day = -1;
  for (let i = at - 1; i >= 0; i--) {
    if (points[i]!.time <= point.time - DAY_MS) {
      day = i;
      break;
    }
  }
  if (day < 0) return false;
  const old = points[day]!.value;
  const growth = point.value - old;
  if (old === 0n) return growth > 0n;
  // growth / old * 100 >= P, in integers.
  return growth * 100n * PCT_SCALE >= scaledPercent(condition.grows_pct_24h) * old;
}

/** Fires at the newest point: the condition holds there and did not at the point before. */
export function alertFires(condition: AlertCondition, points: readonly MetricPoint[]): boolean {
  const last = points.length - 1;
  return holds(condition, points, last) && !holds(condition, points, last - 1);
}
