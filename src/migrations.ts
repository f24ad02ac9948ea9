// Every layer's migrations, in the order they apply. This list lives at the top of src/, beside
// the composition root, because it names every layer: src/db only runs migrations and owns its
// own (the service clock), it does not know who else has tables. Read models are not migrated:
// their tables belong to the projector (projections/versions.ts); what is migrated here is the
// bookkeeping beside them (checkpoints, versions, parked events).
import { schedulerMigrations } from './collect/leases.ts';
import { dashboardMigrations } from './dashboard/schema.ts';
import { eventStoreMigrations } from './eventstore/postgres-schema.ts';
import { notifyMigrations } from './notify/completion-email.ts';
import { webhookMigrations } from './notify/webhooks/schema.ts';
import type { Migration } from './db/migrate.ts';
import { serviceClockMigrations } from './db/service-clock.ts';
import { projectionMigrations } from '../projections/migrations.ts';

export const allMigrations: readonly Migration[] = [
  ...eventStoreMigrations,
  ...serviceClockMigrations,
  ...notifyMigrations,
  ...schedulerMigrations,
  ...projectionMigrations,
  ...dashboardMigrations,
  ...webhookMigrations,
];
