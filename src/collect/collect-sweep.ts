// Collection as a pipelined sweep through the due videos, in (next_slot_at, video_id) order.
// While one batch's events are being appended (and projected), the next batch is claimed
// and collected: each video is visited at most once per sweep, so no batch waits for the
// read models to show the one before it. Only at the end of the sweep does it wait for them.
//
// Money stays exact without that wait: an organization's available funds are read together
// with the usage projection's checkpoint, and the sweep subtracts what it has itself spent
// on snapshots the projection has not yet passed. Spending from before the sweep (an earlier
// sweep whose wait timed out, another scheduler, a holder that died) is recorded in the lease
// row (leases.ts): the sweep spends none of an organization's money until the projection has
// passed it, so nothing the projection does not show yet is ever spent twice.
//
// The append in flight is never left unobserved: its failure is caught as it happens, stops
// the sweep at the next step, and is what the round rejects with.
import { SNAPSHOT_PRICE } from '../domain/money.ts';
import { streamIdOfVideo } from '../domain/video.ts';
import { comparePositions, type Position } from '../eventstore/port.ts';
import { applyDecisions, type AppliedDecisions, type Decision } from './decisions.ts';
import { dueVideosAfter, fundsAtCheckpoint, type DueCursor, type VideoWork } from './due-videos.ts';
import { landedSpending, laterOf, settledSpending } from './landed-spending.ts';
import { leaseOrganizations, markInFlight, recordSpent, releaseOrganizations, renewLeases, type InFlight } from './leases.ts';
import type { WorkDeps } from './work-deps.ts';

/** Spending appended by this sweep; `position` is null until its append returns (and after, when it wrote nothing). */
interface Spending {
  position: Position | null;
  byOrg: Map<string, number>;
  /** Its live snapshots per organization, recorded in the lease rows while the append is under way. */
  inFlight: Map<string, InFlight>;
}

const LEASE_RENEWAL_MS = 10_000;
/** How long a batch waits for the projection to show an organization's earlier spending before leaving its videos to a later sweep. */
const CATCH_UP_MS = 2_000;

export interface SweepStep {
  /** Collects a batch's videos and decides their commands (snapshot, failure, or nothing yet). */
  decide(videos: VideoWork[], now: Date): Promise<Decision[]>;
  /** False for videos that wait for a retry. */
  ready(video: VideoWork, now: Date): boolean;
}

function isAfter(spent: Position | null | undefined, checkpoint: Position | null): boolean {
  return !!spent && (!checkpoint || comparePositions(spent, checkpoint) > 0);
}

/** `stop`: once aborted, no further batch is fetched; the append under way is finished and the leases released. */
export async function sweepDue(deps: WorkDeps, step: SweepStep, stop?: AbortSignal): Promise<AppliedDecisions & { claimed: number }> {
  const now = deps.clock.now();
  const waitMs = deps.projectionWaitMs ?? 60_000;
  const counts = new Map<string, number>();
  const perPlatform = new Map<string, number>();
  let position: Position | null = null;
  const leased = new Set<string>();
  const refused = new Set<string>();
  /** Earlier spending per organization that the projection has not been seen to pass yet. */
  const unprojected = new Map<string, Position>();
  /** Snapshots marked in flight in the lease rows and not yet recorded as landed or not. */
  const unrecorded = new Map<string, InFlight>();
  let spending: Spending[] = [];
  let cursor: DueCursor | null = null;
  let claimed = 0;
  let renewedAt = performance.now();
  // `inFlight` never rejects: a failed append is kept in `failure`, so no rejection goes unhandled.
  let inFlight: Promise<void> = Promise.resolve();
  const failure: { failed: boolean; error?: unknown } = { failed: false };
  let succeeded = false;
  /** Set after one catch-up wait timed out: a lagging projection is not waited for again batch after batch. */
  let lagging = false;

  const record = (applied: AppliedDecisions & { unwritten: Decision[] }, spent: Spending) => {
    spent.position = applied.position;
    // Its append is over: only the snapshots written are spent. An entry left with nothing
    // written (position null) must not go on being subtracted for the rest of the sweep.
    for (const { video, command } of applied.unwritten) {
      if (command.type !== 'RecordSnapshot' || video.mode !== 'live') continue;
      const left = (spent.byOrg.get(video.org_id) ?? 0) - SNAPSHOT_PRICE;
      if (left > 0) spent.byOrg.set(video.org_id, left);
      else spent.byOrg.delete(video.org_id);
    }
    for (const [type, n] of applied.counts) counts.set(type, (counts.get(type) ?? 0) + n);
    for (const [key, n] of applied.perPlatform) perPlatform.set(key, (perPlatform.get(key) ?? 0) + n);
    if (applied.position && (!position || comparePositions(applied.position, position) > 0)) position = applied.position;
  };

  /** This sweep no longer holds `org`: nothing more of it is collected or spent here. */
  const lose = (org: string) => {
    leased.delete(org);
    refused.add(org);
  };

  const take = async (orgIds: string[]) => {
    const leases = await leaseOrganizations(deps.pool, deps.holder, orgIds, orgIds.length);
    for (const lease of leases) {
      leased.add(lease.orgId);
      const spent = await settledSpending(deps.store, deps.pool, deps.holder, lease);
      if (spent) unprojected.set(lease.orgId, spent);
    }
  };

  const appendBatch = async (decisions: Decision[], spent: Spending) => {
    const applied = await applyDecisions(deps.store, decisions);
    record(applied, spent);
    const orgs = [...spent.inFlight.keys()];
    await recordSpent(deps.pool, deps.holder, orgs, applied.position);
    for (const org of orgs) unrecorded.delete(org);
    // Recorded in the lease rows: the marks (a pair of ids per snapshot) are needed no more,
    // and a sweep of a million videos must not hold them all until it ends.
    spent.inFlight.clear();
  };

  try {
    for (;;) {
      if (failure.failed || stop?.aborted) break;
      const batch = await dueVideosAfter(deps.pool, now, cursor, deps.batchSize);
      if (batch.length === 0) break;
      const last = batch[batch.length - 1]!;
      cursor = { atMs: last.next_slot_at_ms, videoId: last.video_id };

      const wanted = [...new Set(batch.map((v) => v.org_id))].filter((org) => !leased.has(org) && !refused.has(org));
      if (wanted.length > 0) {
        await take(wanted);
        for (const org of wanted) if (!leased.has(org)) refused.add(org);
      }
      if (performance.now() - renewedAt > LEASE_RENEWAL_MS) {
        const renewed = await renewLeases(deps.pool, deps.holder, [...leased]);
        for (const org of leased) if (!renewed.has(org)) lose(org);
        renewedAt = performance.now();
      }
      // Another scheduler holds these organizations: their videos are its work.
      const ready = batch.filter((v) => leased.has(v.org_id) && step.ready(v, now));

      const liveOrgs = [...new Set(ready.filter((v) => v.mode === 'live').map((v) => v.org_id))];
      let { funds, position: checkpoint } = await fundsAtCheckpoint(deps.pool, liveOrgs);
      const behind = liveOrgs.filter((org) => isAfter(unprojected.get(org), checkpoint));
      if (behind.length > 0 && !lagging) {
        const target = behind.map((org) => unprojected.get(org)!).reduce((a, b) => laterOf(a, b)!);
        if (await deps.watcher.waitFor(target, Math.min(waitMs, CATCH_UP_MS))) ({ funds, position: checkpoint } = await fundsAtCheckpoint(deps.pool, liveOrgs));
        else lagging = true;
      }
      for (const org of liveOrgs) if (!isAfter(unprojected.get(org), checkpoint)) unprojected.delete(org);
      // Funds that do not show earlier spending yet are not spent: these videos wait for a later sweep.
      const mine = ready.filter((v) => v.mode !== 'live' || !unprojected.has(v.org_id));
      claimed += mine.length;
      if (mine.length === 0) continue;

      // Batches the projection has passed are in the funds already: forgotten.
      spending = spending.filter((s) => !s.position || !checkpoint || comparePositions(s.position, checkpoint) > 0);
      for (const earlier of spending) {
        for (const [org, amount] of earlier.byOrg) if (funds.has(org)) funds.set(org, funds.get(org)! - amount);
      }
      const spent: Spending = { position: null, byOrg: new Map(), inFlight: new Map() };
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
        if (command.type === 'RecordSnapshot' && video.mode === 'live') {
          spent.byOrg.set(video.org_id, (spent.byOrg.get(video.org_id) ?? 0) + SNAPSHOT_PRICE);
          const marks = spent.inFlight.get(video.org_id) ?? [];
          marks.push([streamIdOfVideo(video.video_id), command.snapshot.snapshotId]);
          spent.inFlight.set(video.org_id, marks);
        }
      }
      spending.push(spent);
      // One append in flight while the next batch is prepared.
      await inFlight;
      if (failure.failed) break;
      const marked = await markInFlight(deps.pool, deps.holder, spent.inFlight);
      const lost = new Set([...spent.inFlight.keys()].filter((org) => !marked.has(org)));
      for (const org of lost) {
        // Taken over since its lease ran out: its videos are the new holder's work, its money theirs to spend.
        lose(org);
        spent.inFlight.delete(org);
        spent.byOrg.delete(org);
      }
      const toAppend = lost.size === 0 ? decisions : decisions.filter((d) => !lost.has(d.video.org_id));
      for (const [org, marks] of spent.inFlight) unrecorded.set(org, marks);
      inFlight = appendBatch(toAppend, spent).catch((error: unknown) => {
        if (failure.failed) return;
        failure.failed = true;
        failure.error = error;
      });
    }
    await inFlight;
    if (failure.failed) throw failure.error;
    // Stopping: no round follows that would read the read models, so none is waited for.
    if (!stop?.aborted) await deps.watcher.waitFor(position, waitMs);
    succeeded = true;
    return { counts, perPlatform, position, claimed };
  } finally {
    await inFlight;
    if (unrecorded.size > 0) {
      // An append failed with its outcome unknown (it may have committed): read it from the log
      // now, or leave the marks to whoever holds these organizations next.
      try {
        const landed = await landedSpending(deps.store, [...unrecorded.values()].flat());
        await recordSpent(deps.pool, deps.holder, [...unrecorded.keys()], landed);
      } catch {
        // The lease rows keep the marks: the next holder reads the outcome before spending.
      }
    }
    const released = releaseOrganizations(deps.pool, deps.holder, [...leased]);
    // After a failure, a lease that cannot be released runs out by itself; the failure is what the round reports.
    await (succeeded ? released : released.catch(() => undefined));
  }
}
