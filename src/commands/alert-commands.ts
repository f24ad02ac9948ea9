// Metric alert commands: each appends to the organization's alerts stream through its decider.
import type { Clock } from '../clock.ts';
import type { AlertCondition, AlertMetric } from '../domain/alerts.ts';
import { streamIdOfAlerts } from '../domain/alerts.ts';
import type { KeyMode } from '../domain/platform.ts';
import type { EventStore } from '../eventstore/port.ts';
import { alertsDecider } from './deciders.ts';
import { handleCommand } from './handle.ts';
import { newId } from './ids.ts';

export async function createAlert(
  store: EventStore,
  clock: Clock,
  input: { orgId: string; mode: KeyMode; videoId: string; metric: AlertMetric; condition: AlertCondition },
) {
  const alertId = `alert_${newId().replaceAll('-', '').slice(0, 24)}`;
  const handled = await handleCommand(store, streamIdOfAlerts(input.orgId), alertsDecider, { type: 'CreateAlert', alertId, ...input, now: clock.now() });
  return { alertId, handled };
}

export function deleteAlert(store: EventStore, clock: Clock, orgId: string, alertId: string) {
  return handleCommand(store, streamIdOfAlerts(orgId), alertsDecider, { type: 'DeleteAlert', orgId, alertId, now: clock.now() });
}
