// A store's refusal of an append's data (not of its expected revision, not an outage): the same
// append would be refused again, so a caller isolates the stream at fault instead of retrying.
// `streamId` names it when the adapter knows which one; null when the store refused the whole
// batch (say PostgreSQL's "unsupported Unicode escape sequence" for one row of a statement).
import { hasUnstorableCharacters } from '../domain/storable.ts';

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
 * Whether a value bound for the log holds text the read models cannot (U+0000, an unpaired
 * surrogate), in a string or a key, at any depth. Every adapter refuses such an append, so
 * that nothing enters the log that a projection would fail on, whichever store holds it.
 */
export function holdsUnstorableText(value: unknown): boolean {
  if (typeof value === 'string') return hasUnstorableCharacters(value);
  if (Array.isArray(value)) return value.some(holdsUnstorableText);
  if (value && typeof value === 'object') return Object.entries(value).some(([key, v]) => hasUnstorableCharacters(key) || holdsUnstorableText(v));
  return false;
}
