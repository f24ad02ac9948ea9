// Read-your-writes: lets a caller wait until the read models have passed a position.
// In the process that runs the projector it is fed directly; elsewhere (API or CLI
// processes) it follows the projector's NOTIFY and polls the checkpoints as a fallback.
import pg from 'pg';
import { comparePositions, parsePosition, type Position } from '../src/eventstore/port.ts';
import { readCheckpoints } from './checkpoints.ts';

export const CHECKPOINT_CHANNEL = 'rm_checkpoint';

const RECONNECT_MIN_MS = 1_000;
const RECONNECT_MAX_MS = 30_000;
/** What the projector sends: `commit/prepare`, as formatPosition writes it. */
const POSITION_TEXT = /^\d+\/\d+$/;

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
  private databaseUrl: string | null = null;
  private refresh: (() => Promise<void>) | null = null;
  private reconnect: NodeJS.Timeout | null = null;
  private reconnectMs = RECONNECT_MIN_MS;
  private closed = false;

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

  /**
   * Follows a projector running in another process: its NOTIFY after each page, and its
   * checkpoints every `pollMs` in case a notification is missed. A LISTEN connection that
   * breaks (a network blip, a database restart) is opened again, with backoff; meanwhile the
   * polls carry on.
   */
  async follow(databaseUrl: string, pool: pg.Pool, schema: string, names: readonly string[], pollMs = 500): Promise<void> {
    this.refresh = async () => {
      const checkpoints = [...(await readCheckpoints(pool, schema, names)).values()];
      if (checkpoints.every((c) => c !== null)) {
        this.update(checkpoints.reduce((a, b) => (comparePositions(a!, b!) <= 0 ? a : b))!);
      }
    };
    this.databaseUrl = databaseUrl;
    await this.listen();
    await this.refresh();
    this.poller = setInterval(() => void this.refresh?.().catch(() => undefined), pollMs);
    this.poller.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    if (this.reconnect) clearTimeout(this.reconnect);
    for (const waiter of this.waiters) this.settle(waiter, false);
    await this.dropListener();
  }

  private async dropListener(): Promise<void> {
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl! });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel !== CHECKPOINT_CHANNEL || !message.payload) return;
      // Any role that may connect may NOTIFY this channel: a payload that is no position would
      // throw here, in pg's handler, and take the process down. The checkpoints table says.
      if (POSITION_TEXT.test(message.payload)) this.update(parsePosition(message.payload));
      else void this.refresh?.().catch(() => undefined);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHECKPOINT_CHANNEL}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.listener = client;
    this.reconnectMs = RECONNECT_MIN_MS;
  }

  private lost(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = null;
    void client.end().catch(() => undefined);
    this.listenLater();
  }

  private listenLater(): void {
    // Already scheduled: a connection cut while its reconnection's checkpoint read failed asks
    // twice, and a second timer would open a second connection (and escape close()).
    if (this.closed || this.reconnect) return;
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      this.listen()
        // Notifications sent while nobody listened are lost: look at the checkpoints now.
        .then(() => this.refresh?.())
        .catch(() => {
          // A read that failed after the LISTEN succeeded: that connection is ended before the
          // next one is opened, or it would stay open with nobody to end it (close() ends only
          // the latest).
          void this.dropListener();
          this.reconnectMs = Math.min(this.reconnectMs * 2, RECONNECT_MAX_MS);
          this.listenLater();
        });
    }, this.reconnectMs);
    this.reconnect.unref();
  }

  private settle(waiter: Waiter, passed: boolean): void {
    clearTimeout(waiter.timer);
    this.waiters.delete(waiter);
    waiter.resolve(passed);
  }
}
