// Load a stream, fold it, decide, append with the expected revision; on a conflict,
// load again and decide again (bounded).
import { WrongExpectedRevision, type EventData, type EventStore, type Position } from '../eventstore/port.ts';

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

const MAX_ATTEMPTS = 5;

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

export async function handleCommand<State, Command, Event extends { type: string; data: unknown }>(
  store: EventStore,
  streamId: string,
  decider: Decider<State, Command, Event>,
  command: Command,
): Promise<Handled<State, Event>> {
  for (let attempt = 1; ; attempt++) {
    const { state, revision } = await loadState(store, streamId, decider);
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, state, position: null };
    try {
      const result = await store.append(streamId, events as EventData[], revision);
      return { events, state: events.reduce(decider.evolve, state), position: result.position };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevision) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}
