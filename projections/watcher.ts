// Read-your-writes: lets a caller wait until the read models have passed a position.
// In the process that runs the projector it is fed directly; elsewhere (API or CLI
// processes) it follows the projector's NOTIFY and polls the checkpoints as a fallback.
import pg from 'pg';
import { comparePositions, parsePosition, type Position } from '../src/eventstore/port.ts';
import { readCheckpoints } from './checkpoints.ts';

export const CHECKPOINT_CHANNEL = 'rm_checkpoint';

interface Waiter {
  target: Position;
  resolve: (passed: boolean) => void;
  timer: NodeJS.Timeout;
}

export class ProjectionWatcher {
  private current: Position | null = null;
  private waiters = new Set<Waiter>();
  private listener: pg.Client | null = null;
  private poller: NodeJS.Timeout | null = null;

  get position(): Position | null {
    return this.current;
  }

  update(position: Position | null): void {
    if (!position || (this.current && comparePositions(position, this.current) <= 0)) return;
    this.current = position;
    for (const waiter of this.waiters) {
      if (comparePositions(waiter.target, position) <= 0) this.settle(waiter, true);
    }
  }

  /** Resolves true once every projection has passed `target`, false after `timeoutMs`. */
  waitFor(target: Position | null, timeoutMs: number): Promise<boolean> {
    if (!target || (this.current && comparePositions(target, this.current) <= 0)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = { target, resolve, timer: setTimeout(() => this.settle(waiter, false), timeoutMs) };
      this.waiters.add(waiter);
    });
  }

  /** Follows a projector running in another process. */
  async follow(databaseUrl: string, pool: pg.Pool, schema: string, names: readonly string[], pollMs = 500): Promise<void> {
    const refresh = async () => {
      const checkpoints = [...(await readCheckpoints(pool, schema, names)).values()];
      if (checkpoints.every((c) => c !== null)) {
        this.update(checkpoints.reduce((a, b) => (comparePositions(a!, b!) <= 0 ? a : b))!);
      }
    };
    this.listener = new pg.Client({ connectionString: databaseUrl });
    this.listener.on('error', () => undefined); // the poller below carries on until it is back
    await this.listener.connect();
    this.listener.on('notification', (message) => {
      if (message.channel === CHECKPOINT_CHANNEL && message.payload) this.update(parsePosition(message.payload));
    });
    await this.listener.query(`LISTEN ${CHECKPOINT_CHANNEL}`);
    await refresh();
    this.poller = setInterval(() => void refresh().catch(() => undefined), pollMs);
    this.poller.unref();
  }

  async close(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    for (const waiter of this.waiters) this.settle(waiter, false);
    await this.listener?.end().catch(() => undefined);
  }

  private settle(waiter: Waiter, passed: boolean): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
    waiter.resolve(passed);
  }
}
