// The outcome of an append nobody recorded (its holder died, or lost the database, mid-append),
// read from the log itself: which of its snapshots landed, and where.
import type { Pool } from 'pg';
import type { EventStore, Position } from '../eventstore/port.ts';
import { comparePositions } from '../eventstore/port.ts';
import { recordSpent, type InFlight, type Lease } from './leases.ts';

/** The latest position among the snapshots of `inFlight` that are in the log; null when none landed. */
export async function landedSpending(store: EventStore, inFlight: InFlight): Promise<Position | null> {
  const wanted = new Map<string, Set<string>>();
  for (const [streamId, snapshotId] of inFlight) {
    const ids = wanted.get(streamId) ?? new Set<string>();
    ids.add(snapshotId);
    wanted.set(streamId, ids);
  }
  const streams = store.readStreams
    ? await store.readStreams([...wanted.keys()])
    : new Map(await Promise.all([...wanted.keys()].map(async (id) => [id, await store.readStream(id)] as const)));
  let latest: Position | null = null;
  for (const [streamId, ids] of wanted) {
    for (const event of streams.get(streamId) ?? []) {
      const snapshotId = (event.data as { snapshotId?: unknown } | null)?.snapshotId;
      if (event.type !== 'SnapshotRecorded' || typeof snapshotId !== 'string' || !ids.has(snapshotId)) continue;
      if (!latest || comparePositions(event.position, latest) > 0) latest = event.position;
    }
  }
  return latest;
}

export function laterOf(a: Position | null, b: Position | null): Position | null {
  if (!a) return b;
  if (!b) return a;
  return comparePositions(a, b) >= 0 ? a : b;
}

/**
 * A lease just taken, with the spending of an append its previous holder left unrecorded
 * settled first: read from the log, recorded in the lease row. Returns the organization's
 * latest spending, which the projection must show before its funds are read as current.
 */
export async function settledSpending(store: EventStore, pool: Pool, holder: string, lease: Lease): Promise<Position | null> {
  if (!lease.inFlight) return lease.spent;
  const landed = await landedSpending(store, lease.inFlight);
  await recordSpent(pool, holder, [lease.orgId], landed);
  return laterOf(lease.spent, landed);
}
