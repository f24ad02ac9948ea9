import { apiKeysProjection } from './api-keys.ts';
import { dashboardProjection } from './dashboard.ts';
import type { Projection } from './projection.ts';
import { snapshotsProjection } from './snapshots.ts';
import { usageProjection } from './usage.ts';
import { videosProjection } from './videos.ts';
import { webhooksProjection } from './webhooks.ts';

export const READ_SCHEMA = 'rm';

export const projections: readonly Projection[] = [videosProjection, snapshotsProjection, usageProjection, apiKeysProjection, dashboardProjection, webhooksProjection];

export function projectionByName(name: string): Projection | undefined {
  return projections.find((p) => p.name === name);
}
