// Every collector has the same outer loop: one answer per ref, in order, while the API is called
// once per group of distinct videos (two organizations tracking one video cost one lookup).
import type { FetchResult, VideoRef } from '../collector.ts';
import { CallDeadline } from './call-deadline.ts';
import type { Failure, Unavailable } from './http.ts';
import { Malformed } from './json.ts';

/** Answers for one group, by platform id, or one failure that applies to the whole group. */
export type GroupAnswer = ReadonlyMap<string, FetchResult> | Failure;

export interface BatchPlan {
  /** Refs whose id cannot be the platform's (a call with it could fail the whole group). */
  readonly isValidId: (platformId: string) => boolean;
  /** Splits distinct refs into groups, each fetched by one call (or one paged walk). */
  readonly group: (refs: readonly VideoRef[]) => VideoRef[][];
  /** `deadline`: checked before each further request of the group (the pages of a walk), and the cap on each one's timeout. */
  readonly fetchGroup: (refs: readonly VideoRef[], deadline: CallDeadline) => Promise<GroupAnswer>;
}

/**
 * How long one call may spend asking the platform. Its groups go one after the other, each up to
 * its request's timeout (10 s, and Instagram pages an owner's posts): past this, no further
 * request is sent (call-deadline.ts), so a platform that answers slowly holds back the sweep's
 * batch, every platform's snapshots in it and its organizations' leases, by this much at most.
 */
export const CALL_DEADLINE_MS = 30_000;

/**
 * Runs the groups one after the other, not in parallel: a rate-limit answer to one group must be
 * seen (through the collector's Backoff) before the next group is sent. Once a group finds the
 * platform unavailable (no answer, a 5xx, a refusal of our credentials), the groups left are
 * answered the same without asking: each would wait for the same timeout or refusal.
 */
export async function collectInBatches(label: string, refs: readonly VideoRef[], plan: BatchPlan, deadlineMs = CALL_DEADLINE_MS): Promise<FetchResult[]> {
  const deadline = new CallDeadline(label, deadlineMs);
  const answers = new Map<string, FetchResult>();
  const distinct = new Map<string, VideoRef>();
  for (const ref of refs) {
    if (!plan.isValidId(ref.platformId)) {
      answers.set(ref.platformId, { status: 'not_found', deleted: false, message: `Not a ${label} video id: ${ref.platformId}` });
    } else if (!distinct.has(ref.platformId)) {
      distinct.set(ref.platformId, ref);
    }
  }
  let unreachable: Unavailable | null = null;
  for (const group of plan.group([...distinct.values()])) {
    if (!unreachable) unreachable = deadline.expired() ?? null;
    const answer: GroupAnswer = unreachable ?? (await fetchGuarded(label, plan, group, deadline));
    if (isGroupFailure(answer) && answer.status === 'unavailable') unreachable ??= answer;
    for (const ref of group) {
      answers.set(ref.platformId, isGroupFailure(answer) ? answer : (answer.get(ref.platformId) ?? noAnswer(label)));
    }
  }
  return refs.map((ref) => answers.get(ref.platformId) ?? noAnswer(label));
}

/** Fixed-size groups, for APIs that take a list of ids. */
export function chunksOf(size: number): (refs: readonly VideoRef[]) => VideoRef[][] {
  return (refs) => {
    const groups: VideoRef[][] = [];
    for (let start = 0; start < refs.length; start += size) groups.push(refs.slice(start, start + size));
    return groups;
  };
}

async function fetchGuarded(label: string, plan: BatchPlan, group: readonly VideoRef[], deadline: CallDeadline): Promise<GroupAnswer> {
  try {
    return await plan.fetchGroup(group, deadline);
  } catch (error) {
    // A body that parsed as JSON but not in the API's shape: nothing in it can be trusted.
    if (error instanceof Malformed) return { status: 'invalid', message: `${label} answered an unexpected shape: ${error.message}` };
    // Anything else thrown while reading the answer (a value our reading did not foresee) is
    // this group's alone: the other groups of the call, other owners' or organizations', go on.
    return { status: 'invalid', message: `${label} answered what could not be read: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** Reads one video of an answer; a video in an unexpected shape is `invalid` alone, not its whole group. */
export function readOne(label: string, read: () => FetchResult): FetchResult {
  try {
    return read();
  } catch (error) {
    if (error instanceof Malformed) return { status: 'invalid', message: `${label} answered an unexpected video: ${error.message}` };
    throw error;
  }
}

function isGroupFailure(answer: GroupAnswer): answer is Failure {
  return 'status' in answer;
}

function noAnswer(label: string): FetchResult {
  return { status: 'invalid', message: `${label} gave no answer for this video` };
}
