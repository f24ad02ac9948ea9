// API keys looked up by SHA-256 hash, cached briefly. A revocation reaches every API
// process at once: the projector NOTIFYs `api_key_revoked` and each cache drops the key.
import pg from 'pg';
import { findKeyByHash, type KeyRow } from '../../projections/queries.ts';

const TTL_MS = 10_000;

export class KeyCache {
  private entries = new Map<string, { row: KeyRow | null; until: number }>();
  private listener: pg.Client | null = null;

  constructor(private readonly pool: pg.Pool) {}

  async lookup(keyHash: string): Promise<KeyRow | null> {
    const now = performance.now();
    const hit = this.entries.get(keyHash);
    if (hit && hit.until > now) return hit.row;
    const row = await findKeyByHash(this.pool, keyHash);
    // Unknown keys are not cached: a key issued a moment ago must work at once.
    if (row) this.entries.set(keyHash, { row, until: now + TTL_MS });
    return row;
  }

  evict(keyId: string): void {
    for (const [hash, entry] of this.entries) if (entry.row?.keyId === keyId) this.entries.delete(hash);
  }

  async listen(databaseUrl: string): Promise<void> {
    this.listener = new pg.Client({ connectionString: databaseUrl });
    this.listener.on('error', () => this.entries.clear());
    await this.listener.connect();
    this.listener.on('notification', (m) => m.payload && this.evict(m.payload));
    await this.listener.query('LISTEN api_key_revoked');
  }

  async close(): Promise<void> {
    await this.listener?.end().catch(() => undefined);
  }
}
