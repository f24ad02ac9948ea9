// A multi-stream append never fails for one member's data: when the store refuses a batch
// because of what one stream carries, the batch goes again without it (when the store named
// it) or in halves (when it did not), down to the one stream at fault. Outages and bugs are
// not data refusals: they fail the whole call, as before, and are not multiplied into a
// storm of smaller appends; but once a part of the batch is written, an outage in a later
// part fails that part's streams only (`failed`), so that no written stream is reported lost.
import type { BatchAppendResult, EventStore, StreamAppend } from './port.ts';
import { isUnstorableData, type UnstorableData } from './unstorable.ts';

export type IsolatedAppendResult = BatchAppendResult | { readonly streamId: string; readonly ok: false; readonly refused: UnstorableData };

export function isRefused(result: IsolatedAppendResult): result is Extract<IsolatedAppendResult, { refused: UnstorableData }> {
  return !result.ok && 'refused' in result;
}

/** appendMany, with the streams whose data the store refuses set apart: one result per append, in order. */
export async function appendManyIsolating(store: Pick<EventStore, 'appendMany'>, appends: readonly StreamAppend[]): Promise<IsolatedAppendResult[]> {
  if (appends.length === 0) return [];
  try {
    return await store.appendMany(appends);
  } catch (error) {
    if (!isUnstorableData(error)) throw error;
    if (appends.length === 1) return [{ streamId: appends[0]!.streamId, ok: false, refused: error }];
    const named = error.streamId === null ? -1 : appends.findIndex((a) => a.streamId === error.streamId);
    if (named >= 0) {
      const others = await appendManyIsolating(store, [...appends.slice(0, named), ...appends.slice(named + 1)]);
      return [...others.slice(0, named), { streamId: appends[named]!.streamId, ok: false, refused: error }, ...others.slice(named)];
    }
    // One half after the other: both halves in flight at once would only contend.
    const half = Math.ceil(appends.length / 2);
    const first = await appendManyIsolating(store, appends.slice(0, half));
    return [...first, ...(await afterWritten(first, store, appends.slice(half)))];
  }
}

/** The rest of a batch of which `done` is settled: an outage now fails the rest only, if `done` wrote a stream. */
async function afterWritten(done: readonly IsolatedAppendResult[], store: Pick<EventStore, 'appendMany'>, rest: readonly StreamAppend[]): Promise<IsolatedAppendResult[]> {
  try {
    return await appendManyIsolating(store, rest);
  } catch (error) {
    if (!done.some((result) => result.ok)) throw error;
    return rest.map((append) => ({ streamId: append.streamId, ok: false, failed: error }));
  }
}
