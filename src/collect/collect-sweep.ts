// Collection as a pipelined sweep through the due videos, in (next_slot_at, video_id) order.
// While one batch's events are being appended (and projected), the next batch is claimed
// and collected: each video is visited at most once per sweep, so no batch waits for the
// read models to show the one before it. Only at the end of the sweep does it wait for them.
//
// Money stays exact without that wait: an organization's available funds are read together
// with the usage projection's checkpoint, and the sweep subtracts what it has itself spent
// on snapshots the projection has not yet passed. Only the holder of an organization's lease
// spends its money, and it holds the lease until its spending is projected.
import { SNAPSHOT_PRICE } from '../domain/money.ts';
import { comparePositions, type Position } from '../eventstore/port.ts';
import { applyDecisions, type AppliedDecisions, type Decision } from './decisions.ts';
import { dueVideosAfter, fundsAtCheckpoint, type DueCursor, type VideoWork } from './due-videos.ts';
import { leaseOrganizations, releaseOrganizations } from './leases.ts';
import type { WorkDeps } from './work.ts';

/** Spending appended by this sweep; `position` is null until its append returns. */
interface Spending {
  position: Position | null;
  byOrg: Map<string, number>;
}

const LEASE_RENEWAL_MS = 10_000;

export interface SweepStep {
  /** Collects a batch's videos and decides their commands (snapshot, failure, or nothing yet). */
  decide(videos: VideoWork[], now: Date): Promise<Decision[]>;
  /** False for videos that wait for a retry. */
  ready(video: VideoWork, now: Date): boolean;
}

export async function sweepDue(deps: WorkDeps, step: SweepStep): Promise<AppliedDecisions & { claimed: number }> {
  const now = deps.clock.now();
  const counts = new Map<string, number>();
  const perPlatform = new Map<string, number>();
  let position: Position | null = null;
  const leased = new Set<string>();
  const refused = new Set<string>();
  const spending: Spending[] = [];
  let cursor: DueCursor | null = null;
  let claimed = 0;
  let append: Promise<void> = Promise.resolve();
  let renewedAt = performance.now();

  const record = (applied: AppliedDecisions, spent: Spending) => {
    spent.position = applied.position;
    for (const [type, n] of applied.counts) counts.set(type, (counts.get(type) ?? 0) + n);
    for (const [key, n] of applied.perPlatform) perPlatform.set(key, (perPlatform.get(key) ?? 0) + n);
    if (applied.position && (!position || comparePositions(applied.position, position) > 0)) position = applied.position;
  };

  try {
    for (;;) {
      const batch = await dueVideosAfter(deps.pool, now, cursor, deps.batchSize);
      if (batch.length === 0) break;
      const last = batch[batch.length - 1]!;
      cursor = { at: last.next_slot_at, videoId: last.video_id };

      const wanted = [...new Set(batch.map((v) => v.org_id))].filter((org) => !leased.has(org) && !refused.has(org));
      if (wanted.length > 0) {
        const got = await leaseOrganizations(deps.pool, deps.holder, wanted, wanted.length);
        for (const org of got) leased.add(org);
        for (const org of wanted) if (!leased.has(org)) refused.add(org);
      }
      if (performance.now() - renewedAt > LEASE_RENEWAL_MS) {
        await leaseOrganizations(deps.pool, deps.holder, [...leased], leased.size);
        renewedAt = performance.now();
      }
      // Another scheduler holds these organizations: their videos are its work.
      const mine = batch.filter((v) => leased.has(v.org_id) && step.ready(v, now));
      claimed += mine.length;
      if (mine.length === 0) continue;

      const { funds, position: checkpoint } = await fundsAtCheckpoint(deps.pool, [...new Set(mine.filter((v) => v.mode === 'live').map((v) => v.org_id))]);
      for (const spent of spending) {
        if (spent.position && checkpoint && comparePositions(spent.position, checkpoint) <= 0) continue;
        for (const [org, amount] of spent.byOrg) if (funds.has(org)) funds.set(org, funds.get(org)! - amount);
      }
      const spent: Spending = { position: null, byOrg: new Map() };
      const toCollect: VideoWork[] = [];
      const decisions: Decision[] = [];
      for (const video of mine) {
        if (video.mode === 'live') {
          const available = funds.get(video.org_id) ?? 0;
          if (available < SNAPSHOT_PRICE) {
            decisions.push({ video, command: { type: 'Pause', now } });
            continue;
          }
          funds.set(video.org_id, available - SNAPSHOT_PRICE);
        }
        toCollect.push(video);
      }
      for (const decision of await step.decide(toCollect, now)) {
        decisions.push(decision);
        const { video, command } = decision;
        if (command.type === 'RecordSnapshot' && video.mode === 'live') spent.byOrg.set(video.org_id, (spent.byOrg.get(video.org_id) ?? 0) + SNAPSHOT_PRICE);
      }
      spending.push(spent);
      // One append in flight while the next batch is prepared.
      await append;
      append = applyDecisions(deps.store, decisions).then((applied) => record(applied, spent));
    }
    await append;
    await deps.watcher.waitFor(position, 60_000);
    return { counts, perPlatform, position, claimed };
  } finally {
    await append.catch(() => undefined);
    await releaseOrganizations(deps.pool, deps.holder, [...leased]);
  }
}
