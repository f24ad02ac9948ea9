// API keys looked up by SHA-256 hash, kept between requests. A key is kept together with the
// number of revoked keys the read models held when the request that looked it up arrived
// (read-barrier.ts), and is used again only while that number stands: any revocation since,
// by this process, another API process or the admin CLI, sends every key back to the read
// model. The count is read after each request arrives, so a revocation that landed while a
// lookup was in flight cannot be kept either: the next request sees a higher count.
import type { Pool } from 'pg';
import { findKeyByHash, type KeyRow } from '../../projections/queries.ts';

/** Keys kept at most; the oldest go first (a Map keeps insertion order). */
const MAX_ENTRIES = 50_000;

export class KeyCache {
  private readonly entries = new Map<string, { row: KeyRow; revokedKeys: number }>();

  constructor(private readonly pool: Pool) {}

  /** `revokedKeys`: the count of the request's read view. */
  async lookup(keyHash: string, revokedKeys: number): Promise<KeyRow | null> {
    const hit = this.entries.get(keyHash);
    if (hit && hit.revokedKeys === revokedKeys) return hit.row;
    const row = await findKeyByHash(this.pool, keyHash);
    // Unknown keys are not kept: a key issued a moment ago must work at once.
    if (!row || row.revoked) {
      this.entries.delete(keyHash);
      return row;
    }
    // Read after the count was: a revocation in between would show in the row, or in a higher count later.
    this.entries.delete(keyHash);
    this.entries.set(keyHash, { row, revokedKeys });
    if (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    return row;
  }
}
