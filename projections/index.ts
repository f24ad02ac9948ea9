import { apiKeysProjection } from './api-keys.ts';
import { dashboardProjection } from './dashboard.ts';
import type { Projection } from './projection.ts';
import { snapshotsProjection } from './snapshots.ts';
import { usageProjection } from './usage.ts';
import { videosProjection } from './videos.ts';
import { webhooksProjection } from './webhooks.ts';
import { alertsProjection } from './alerts.ts';

export const READ_SCHEMA = 'rm';

export const projections: readonly Projection[] = [videosProjection, snapshotsProjection, usageProjection, apiKeysProjection, dashboardProjection, webhooksProjection, alertsProjection];

export function projectionByName(name: string): Projection | undefined {
  return projections.find((p) => p.name === name);
}
