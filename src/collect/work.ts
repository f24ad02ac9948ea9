// The scheduler's recurring work, each function one round over due work in bulk.
import { HOUR_MS } from '../clock.ts';
import { SNAPSHOT_PRICE } from '../domain/money.ts';
import type { VideoCommand } from '../domain/video-decide.ts';
import { slotDueAt } from '../domain/video.ts';
import { comparePositions, type Position } from '../eventstore/port.ts';
import { charge } from '../commands/account-commands.ts';
import { snapshotIdOf } from '../commands/ids.ts';
import type { Collector, FetchResult } from './collector.ts';
import type { CollectorSet } from './collectors.ts';
import { applyDecisions, type AppliedDecisions, type Decision } from './decisions.ts';
import { endedVideos, fundsAtCheckpoint, pausedVideos, unchargedOrganizations, type VideoWork } from './due-videos.ts';
import { settledSpending } from './landed-spending.ts';
import { leaseOrganizations, releaseOrganizations } from './leases.ts';
import { sweepDue } from './collect-sweep.ts';
import type { WorkDeps } from './work-deps.ts';

export type { WorkDeps } from './work-deps.ts';

/** After a failed attempt (platform unreachable), try the slot again this much later (service time). */
const RETRY_AFTER_MS = 5 * 60_000;
/** When each video whose slot could not be collected may be tried again (never past its slot's hour). */
const retryAt = new Map<string, number>();

/** Drops the times already past: a video stopped or ended while it waited is not seen again. */
function forgetPastRetries(now: number): void {
  for (const [videoId, at] of retryAt) if (at <= now) retryAt.delete(videoId);
}

/**
 * The next spending of money waits for the read models to show the last one: an
 * organization's available funds are read from them, so they must be current.
 */
async function settle(deps: WorkDeps, applied: AppliedDecisions): Promise<AppliedDecisions> {
  await deps.watcher.waitFor(applied.position, deps.projectionWaitMs ?? 30_000);
  return applied;
}

/**
 * One sweep of collection: every due slot of the organizations this scheduler leases, paid for
 * or paused. `stop` ends it at the next batch (the scheduler is stopping).
 */
export function collectDue(deps: WorkDeps, stop?: AbortSignal): Promise<AppliedDecisions & { claimed: number }> {
  forgetPastRetries(deps.clock.now().getTime());
  const sweep = () => sweepDue(deps, {
    ready: (video, now) => (retryAt.get(video.video_id) ?? 0) <= now.getTime(),
    async decide(videos, now) {
      const results = await collectAll(deps.collectors, videos);
      const decisions: Decision[] = [];
      videos.forEach((video, i) => {
        const command = commandFor(video, results[i]!, now);
        if (command) decisions.push({ video, command });
      });
      return decisions;
    },
  }, stop);
  return deps.activity ? deps.activity.during(sweep) : sweep();
}

/** Each collector gets its videos in one call (it batches as its platform allows). */
async function collectAll(collectors: CollectorSet, videos: VideoWork[]): Promise<FetchResult[]> {
  const groups = new Map<Collector, number[]>();
  videos.forEach((video, i) => {
    const collector = collectors.forVideo(video.mode, video.platform);
    const group = groups.get(collector);
    if (group) group.push(i);
    else groups.set(collector, [i]);
  });
  const results: FetchResult[] = new Array(videos.length);
  await Promise.all(
    [...groups].map(async ([collector, indexes]) => {
      const refs = indexes.map((i) => {
        const v = videos[i]!;
        return { platform: v.platform, platformId: v.platform_id, videoLink: v.video_link, slot: v.next_slot };
      });
      const answers = await collector.collect(refs).catch((error: unknown) => refs.map(() => ({ status: 'unavailable' as const, message: String(error) })));
      // A collector that answers fewer refs than asked leaves the rest unavailable (retried), not a crash.
      indexes.forEach((i, k) => (results[i] = answers[k] ?? { status: 'unavailable', message: `${collector.name} gave no answer for this video` }));
    }),
  );
  return results;
}

function commandFor(video: VideoWork, result: FetchResult, now: Date): VideoCommand | null {
  const slot = video.next_slot;
  if (result.status === 'ok') {
    retryAt.delete(video.video_id);
    const { metrics, metadata, provider } = result;
    return { type: 'RecordSnapshot', slot, snapshot: { snapshotId: snapshotIdOf(video.video_id, slot), provider, metrics, metadata }, now };
  }
  if (result.status === 'not_found') {
    return { type: 'RecordCollectionFailure', slot, reason: result.deleted ? 'deleted' : 'not_found', message: result.message, now };
  }
  // Unreachable, unreadable or held back by our own limit: retry the slot until its hour is
  // over, then record it failed (the decider counts only the platform's failures toward error).
  const hourEnds = slotDueAt(video.monitoring_started_ms, slot) + HOUR_MS;
  if (now.getTime() >= hourEnds) {
    retryAt.delete(video.video_id);
    const reason = result.status === 'unavailable' && result.ownLimit ? 'own_limit' : 'unreachable';
    return { type: 'RecordCollectionFailure', slot, reason, message: result.message, now };
  }
  // Not before the platform's word, nor after the hour's end: a wait past it would keep the
  // hour from ever being counted.
  const platformSays = (result.status === 'unavailable' && result.retryAfter?.getTime()) || 0;
  retryAt.set(video.video_id, Math.min(hourEnds, Math.max(now.getTime() + RETRY_AFTER_MS, Number.isFinite(platformSays) ? platformSays : 0)));
  return null;
}

/** Completes videos whose tracking period has ended. */
export async function completeEnded(deps: WorkDeps): Promise<AppliedDecisions> {
  const now = deps.clock.now();
  const ended = await endedVideos(deps.pool, now, deps.batchSize);
  return settle(deps, await applyDecisions(deps.store, ended.map((video) => ({ video, command: { type: 'Complete', now } }))));
}

/** Resumes paused videos of organizations that can pay again (after a deposit). */
export async function resumeFunded(deps: WorkDeps): Promise<AppliedDecisions> {
  const now = deps.clock.now();
  const paused = await pausedVideos(deps.pool, now, deps.batchSize);
  // A holder name of its own: the collect job of this scheduler runs beside it, and under the
  // same name each would take over, and then release, the other's leases.
  const holder = `${deps.holder}/resume`;
  const leases = await leaseOrganizations(deps.pool, holder, [...new Set(paused.map((v) => v.org_id))], 1000);
  const orgs = leases.map((lease) => lease.orgId);
  try {
    // An append a dead holder left unrecorded is settled first (as a sweep's take does), so
    // its organization is not left paused for want of someone to read the outcome.
    const spent = await Promise.all(leases.map((lease) => settledSpending(deps.store, deps.pool, holder, lease)));
    const { funds, position: checkpoint } = await fundsAtCheckpoint(deps.pool, orgs);
    // Funds that do not show an organization's latest spending yet would resume what it cannot pay for.
    leases.forEach((lease, i) => {
      const latest = spent[i];
      if (latest && (!checkpoint || comparePositions(latest, checkpoint) > 0)) funds.delete(lease.orgId);
    });
    const decisions: Decision[] = [];
    for (const video of paused) {
      const available = funds.get(video.org_id);
      if (available === undefined || available < SNAPSHOT_PRICE) continue;
      funds.set(video.org_id, available - SNAPSHOT_PRICE);
      decisions.push({ video, command: { type: 'Resume', now } });
    }
    return await settle(deps, await applyDecisions(deps.store, decisions));
  } finally {
    await releaseOrganizations(deps.pool, holder, orgs);
  }
}

/** Charges each organization for the live snapshots recorded since its last charge. */
export async function chargeUsage(deps: WorkDeps): Promise<{ charged: number; position: Position | null }> {
  let charged = 0;
  let position: Position | null = null;
  for (const { orgId, liveSnapshots } of await unchargedOrganizations(deps.pool, deps.batchSize)) {
    const handled = await charge(deps.store, deps.clock, orgId, liveSnapshots);
    if (handled.position) {
      charged++;
      position = handled.position;
    }
  }
  await deps.watcher.waitFor(position, deps.projectionWaitMs ?? 30_000);
  return { charged, position };
}
