// API keys looked up by SHA-256 hash, cached briefly. A revocation reaches every API
// process at once: the projector NOTIFYs `api_key_revoked` and each cache drops the key.
// The cache is only as good as that LISTEN connection: while it is down, revocations could
// be missed, so nothing is cached (every lookup asks the read model) until it is back.
import pg from 'pg';
import { findKeyByHash, type KeyRow } from '../../projections/queries.ts';

const TTL_MS = 10_000;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

export class KeyCache {
  private entries = new Map<string, { row: KeyRow | null; until: number }>();
  private listener: pg.Client | null = null;
  private databaseUrl: string | null = null;
  private closed = false;

  constructor(private readonly pool: pg.Pool) {}

  async lookup(keyHash: string): Promise<KeyRow | null> {
    const now = performance.now();
    const hit = this.listener ? this.entries.get(keyHash) : undefined;
    if (hit && hit.until > now) return hit.row;
    const row = await findKeyByHash(this.pool, keyHash);
    // Unknown keys are not cached: a key issued a moment ago must work at once.
    if (row && this.listener) this.entries.set(keyHash, { row, until: now + TTL_MS });
    return row;
  }

  evict(keyId: string): void {
    for (const [hash, entry] of this.entries) if (entry.row?.keyId === keyId) this.entries.delete(hash);
  }

  async listen(databaseUrl: string): Promise<void> {
    this.databaseUrl = databaseUrl;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.databaseUrl! });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (m) => m.payload && this.evict(m.payload));
    try {
      await client.connect();
      await client.query('LISTEN api_key_revoked');
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    if (this.closed) return void (await client.end().catch(() => undefined));
    this.listener = client;
  }

  /** Revocations may have been missed: forget every key, stop caching, listen again (with backoff). */
  private lost(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = null;
    this.entries.clear();
    void client.end().catch(() => undefined);
    this.reconnect(RECONNECT_MIN_MS);
  }

  private reconnect(delayMs: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.connect().catch(() => this.reconnect(Math.min(delayMs * 2, RECONNECT_MAX_MS)));
    }, delayMs);
    timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
  }
}
