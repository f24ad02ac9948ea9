// A store's refusal of an append's data (not of its expected revision, not an outage): the same
// append would be refused again, so a caller isolates the stream at fault instead of retrying.
// `streamId` names it when the adapter knows which one; null when the store refused the whole
// batch (say PostgreSQL's "unsupported Unicode escape sequence" for one row of a statement).
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
