// Load a stream, fold it, decide, append with the expected revision; on a conflict,
// pause a moment, load again and decide again (bounded). Commands on one stream run one at
// a time within a process, so they do not conflict with one another; a writer elsewhere
// (another process, an append not made through handleCommand) still can.
import { WrongExpectedRevision, type EventData, type EventStore, type Position } from '../eventstore/port.ts';
import { oneAtATime } from '../one-at-a-time.ts';

export interface Decider<State, Command, Event extends { type: string; data: unknown }> {
  initialState: State;
  evolve(state: State, event: Event): State;
  decide(command: Command, state: State): Event[];
}

export interface Handled<State, Event> {
  events: Event[];
  state: State;
  /** Global position of the last appended event; null when the command changed nothing. */
  position: Position | null;
}

/**
 * Enough for a few writers meeting on one stream (one per process, the commands of a process
 * being queued): each round of a conflict lets one writer through.
 */
export const MAX_ATTEMPTS = 10;

/**
 * After a conflict: a random pause, its ceiling doubling with each attempt (5 ms, then up to
 * 160 ms), so that writers that met once spread out instead of meeting again at once.
 */
export function pauseAfterConflict(attempt: number): Promise<void> {
  const ceilingMs = Math.min(160, 5 * 2 ** (attempt - 1));
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceilingMs));
}

export async function loadState<State, Event extends { type: string; data: unknown }>(
  store: EventStore,
  streamId: string,
  decider: Pick<Decider<State, unknown, Event>, 'initialState' | 'evolve'>,
): Promise<{ state: State; revision: bigint | 'no_stream' }> {
  const recorded = await store.readStream(streamId);
  let state = decider.initialState;
  for (const e of recorded) state = decider.evolve(state, { type: e.type, data: e.data } as Event);
  return { state, revision: recorded.length === 0 ? 'no_stream' : recorded[recorded.length - 1]!.revision };
}

/**
 * Commands of this process on one stream wait for one another: all of an organization's alerts
 * (its endpoints, its account) are one stream, and a burst of its requests would otherwise
 * conflict with one another and run out of attempts.
 */
const onStream = oneAtATime();

export function handleCommand<State, Command, Event extends { type: string; data: unknown }>(
  store: EventStore,
  streamId: string,
  decider: Decider<State, Command, Event>,
  command: Command,
): Promise<Handled<State, Event>> {
  return onStream(streamId, async () => {
    for (let attempt = 1; ; attempt++) {
      const { state, revision } = await loadState(store, streamId, decider);
      const events = decider.decide(command, state);
      if (events.length === 0) return { events, state, position: null };
      try {
        const result = await store.append(streamId, events as EventData[], revision);
        return { events, state: events.reduce(decider.evolve, state), position: result.position };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
        await pauseAfterConflict(attempt);
      }
    }
  });
}
