// given(events).when(command).then(expectedEvents | expectedErrorCode), in the manner of
// emmett's DeciderSpecification: the past is a list of events, the decision is checked as the
// events it produces or the DomainError it throws.
import assert from 'node:assert/strict';
import { DomainError, type DomainErrorCode } from '../../src/domain/errors.ts';

export interface Decider<Command, Event, State> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState: State;
}

export type ExpectedError = DomainErrorCode | { code: DomainErrorCode; message: string | RegExp };

export interface Outcome<State> {
  /** The state folded from the given events and the produced ones. */
  state: State;
}

export function deciderSpec<Command, Event, State>(decider: Decider<Command, Event, State>) {
  const fold = (events: readonly Event[], from: State = decider.initialState) => events.reduce(decider.evolve, from);

  return function given(events: readonly Event[] = []) {
    const past = fold(events);
    return {
      when(command: Command) {
        const decide = () => decider.decide(command, past);
        return {
          then(expected: readonly Event[] | ExpectedError): Outcome<State> {
            if (Array.isArray(expected)) {
              const produced = decide();
              assert.deepStrictEqual(produced, expected);
              return { state: fold(produced, past) };
            }
            const { code, message } = typeof expected === 'string' ? { code: expected, message: undefined } : (expected as Exclude<ExpectedError, string>);
            assert.throws(decide, (error: unknown) => {
              assert.ok(error instanceof DomainError, `expected a DomainError, got ${String(error)}`);
              assert.equal(error.code, code);
              if (typeof message === 'string') assert.equal(error.message, message);
              else if (message) assert.match(error.message, message);
              return true;
            });
            return { state: past };
          },
          /** For a command that must change nothing: no events, state untouched. */
          thenNothing(): Outcome<State> {
            assert.deepStrictEqual(decide(), []);
            return { state: past };
          },
        };
      },
    };
  };
}
