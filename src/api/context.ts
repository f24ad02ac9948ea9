import type { Pool } from 'pg';
import type { Clock } from '../clock.ts';
import type { CollectorSet } from '../collect/collectors.ts';
import type { EventStore, Position } from '../eventstore/port.ts';
import type { ProjectionWatcher } from '../../projections/watcher.ts';
import type { Metrics } from '../metrics.ts';
import type { DashboardOptions } from '../dashboard/commands.ts';
import type { KeyUsageCounter } from '../dashboard/key-usage.ts';
import type { UrlPolicy } from '../domain/webhook-url.ts';
import type { SecretBox } from '../notify/webhooks/secret-box.ts';

/** What the API needs from the rest of the service, handed to `buildApp` by the composition root. */
export interface ApiDeps {
  pool: Pool;
  store: EventStore;
  collectors: CollectorSet;
  clock: Clock;
  watcher: ProjectionWatcher;
  /** True once projections and scheduler are running: /health answers 200 only then. */
  isReady: () => boolean;
  failedAuthLimit?: number;
  /** REDIS_URL: rate-limit counts shared by every API replica; in this process's memory when absent. */
  redisUrl?: string | null;
  /** Longest wait for the read models to pass a command's events before answering. */
  readYourWritesMs?: number;
  /** Prometheus metrics, served at GET /metrics. */
  metrics?: Metrics;
  /** The organization's dashboard at `/`; absent: the REST API alone. */
  dashboard?: DashboardOptions;
  /** Counts each authenticated request per key (the dashboard's Requests and Last used); absent: not counted. */
  keyUsage?: KeyUsageCounter;
  /** Webhook endpoints' secret sealing and URL rules; absent: no /webhooks routes. */
  webhooks?: { box: SecretBox; policy: UrlPolicy; kick?: () => void };
}

/**
 * Read-your-writes: answer a command only once the read models show its events (bounded).
 * False when the wait ran out first: an answer that shows the read models must then say so.
 */
export function awaitProjection(deps: ApiDeps, position: Position | null): Promise<boolean> {
  return deps.watcher.waitFor(position, deps.readYourWritesMs ?? 2_000);
}
