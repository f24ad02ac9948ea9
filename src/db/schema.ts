// Every layer's migrations, in the order they apply. Read models are not migrated: their
// tables are created from the projections (and rebuilt from the log when they change).
import { SCHEDULER_SCHEMA_DDL } from '../collect/leases.ts';
import { eventStoreMigrations } from '../eventstore/postgres-schema.ts';
import { notifyMigrations } from '../notify/completion-email.ts';
import type { Migration } from './migrate.ts';
import { serviceClockMigrations } from './service-clock.ts';

export const allMigrations: readonly Migration[] = [
  ...eventStoreMigrations,
  ...serviceClockMigrations,
  ...notifyMigrations,
  { id: 'scheduler/001-leases', sql: SCHEDULER_SCHEMA_DDL },
];
