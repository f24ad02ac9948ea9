// A store's refusal of an append's data (not of its expected revision, not an outage): the same
// append would be refused again, so a caller isolates the stream at fault instead of retrying.
// `streamId` names it when the adapter knows which one; null when the store refused the whole
// batch (say PostgreSQL's "unsupported Unicode escape sequence" for one row of a statement).
import { unstorableTextPath } from '../domain/storable.ts';
import type { EventData } from './port.ts';

export class UnstorableData extends TypeError {
  constructor(
    readonly streamId: string | null,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UnstorableData';
  }
}

export function isUnstorableData(error: unknown): error is UnstorableData {
  return error instanceof UnstorableData;
}

/**
 * Whether any of the events holds text the read models cannot (U+0000, an unpaired surrogate) in
 * its data or metadata, in a string or a key, at any depth. Every adapter refuses such an append,
 * so that nothing enters the log that a projection would fail on, whichever store holds it.
 */
export function holdsUnstorableText(events: readonly EventData[]): boolean {
  return events.some((event) => unstorableTextPath(event.data) !== null || unstorableTextPath(event.metadata) !== null);
}
