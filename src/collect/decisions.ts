// Decide many video commands from read-model rows and append them in one batch. A stream
// that moved on since its row was projected is decided again from the stream itself. A
// stream whose data the store refuses is set apart from the batch (appendManyIsolating), so
// every other stream lands; its slot is recorded as a collection failure, appended alone.
import { DomainError } from '../domain/errors.ts';
import { decideVideo, type VideoCommand } from '../domain/video-decide.ts';
import { streamIdOfVideo } from '../domain/video.ts';
import { appendManyIsolating, isRefused } from '../eventstore/isolate.ts';
import { comparePositions, type EventStore, type Position, type StreamAppend } from '../eventstore/port.ts';
import { isUnstorableData } from '../eventstore/unstorable.ts';
import { videoDecider } from '../commands/deciders.ts';
import { handleCommand } from '../commands/handle.ts';
import { stateOf, type VideoWork } from './due-videos.ts';

export interface Decision {
  video: VideoWork;
  command: VideoCommand;
}

export interface AppliedDecisions {
  /** Event types appended, counted (for metrics and tests). */
  counts: Map<string, number>;
  /** The same, per platform: `${platform}:${type}`. */
  perPlatform: Map<string, number>;
  /** The last position written, for read-your-writes. */
  position: Position | null;
}

function decideOrSkip(command: VideoCommand, state: ReturnType<typeof stateOf>) {
  try {
    return decideVideo(command, state);
  } catch (error) {
    // A refusal means the video moved on (stopped, cancelled): there is nothing to do.
    if (error instanceof DomainError) return [];
    throw error;
  }
}

/** `unwritten`: the decisions whose command was not written as decided (the video moved on, or the store refused it). */
export async function applyDecisions(store: EventStore, decisions: readonly Decision[]): Promise<AppliedDecisions & { unwritten: Decision[] }> {
  const counts = new Map<string, number>();
  const perPlatform = new Map<string, number>();
  let position: Position | null = null;
  const unwritten: Decision[] = [];
  const note = (platform: string, events: readonly { type: string }[], at: Position | null) => {
    for (const { type } of events) {
      counts.set(type, (counts.get(type) ?? 0) + 1);
      const key = `${platform}:${type}`;
      perPlatform.set(key, (perPlatform.get(key) ?? 0) + 1);
    }
    if (at && (!position || comparePositions(at, position) > 0)) position = at;
  };

  const appends: StreamAppend[] = [];
  const pending: Decision[] = [];
  for (const decision of decisions) {
    const events = decideOrSkip(decision.command, stateOf(decision.video));
    if (events.length === 0) {
      unwritten.push(decision);
      continue;
    }
    appends.push({ streamId: streamIdOfVideo(decision.video.video_id), events, expectedRevision: BigInt(decision.video.revision) });
    pending.push(decision);
  }
  if (appends.length === 0) return { counts, perPlatform, position, unwritten };

  const results = await appendManyIsolating(store, appends);
  // A stream whose append failed (an outage) while others were written: the round fails as it
  // did when the whole call failed, and the sweep reads what landed from the log.
  for (const result of results) if ('failed' in result) throw result.failed;
  const retries: { decided: Decision; retry: Decision }[] = [];
  results.forEach((result, i) => {
    const decided = pending[i]!;
    if (result.ok) note(decided.video.platform, appends[i]!.events, result.result.position);
    else if (isRefused(result)) retries.push({ decided, retry: unstorable(decided, result.refused.message) });
    else retries.push({ decided, retry: decided });
  });
  for (const { decided, retry } of retries) {
    const { video, command } = retry;
    let written = false;
    try {
      const handled = await handleCommand(store, streamIdOfVideo(video.video_id), videoDecider, command);
      note(video.platform, handled.events, handled.position);
      // A snapshot refused by the store is written, if at all, as a collection failure: not as decided.
      written = retry === decided && handled.events.length > 0;
    } catch (error) {
      // Refused again, alone: nothing this scheduler can write for it now; the next sweep tries again.
      if (!(error instanceof DomainError) && !isUnstorableData(error)) throw error;
    }
    if (!written) unwritten.push(decided);
  }
  return { counts, perPlatform, position, unwritten };
}

/** A snapshot the store refused is a failed collection of its slot; other commands carry no platform data and are retried as they are. */
function unstorable(decision: Decision, why: string): Decision {
  const { command } = decision;
  if (command.type !== 'RecordSnapshot') return decision;
  return {
    video: decision.video,
    command: { type: 'RecordCollectionFailure', slot: command.slot, reason: 'unstorable', message: `the platform's answer could not be stored: ${why}`, now: command.now },
  };
}
