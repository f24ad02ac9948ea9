// What every scheduler round needs, in a module of its own: the rounds (work.ts) and the
// collection sweep (collect-sweep.ts) both take it, and neither imports the other for it.
import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import type { EventStore } from '../eventstore/port.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';
import type { CollectionActivity } from './activity.ts';
import type { CollectorSet } from './collectors.ts';

export interface WorkDeps {
  pool: Pool;
  store: EventStore;
  collectors: CollectorSet;
  clock: Clock;
  watcher: ProjectionWatcher;
  /** This scheduler's name in leases. */
  holder: string;
  batchSize: number;
  /**
   * Longest wait for the read models to show a round's appends (default 60 s for a sweep, 30 s
   * for the other rounds). Money does not depend on it: a wait that times out only means the
   * next round reads older read models.
   */
  projectionWaitMs?: number;
  /** Told while a collection sweep runs (the webhook dispatcher yields to it). */
  activity?: CollectionActivity;
}
