// The `cursor` of GET /videos (DESIGN §8): where the next page starts, opaque to clients.
//
// A cursor is base64url of a small JSON: the seek key of the last video of the page it ends
// (created_at, id; the list is newest first) and a fingerprint of that key together with
// what the list was filtered on (the key's organization and mode, platform, status). A cursor
// is taken back only with the same filters: a page of another filter would start at a place
// that list never reached, so the walk could skip or repeat videos without anyone noticing.
//
// The fingerprint is a hash, not a signature: the service has no secret shared by every API
// process to sign with. It is enough for what it is for: a cursor edited by hand, cut short,
// or issued for other filters (or another organization or mode) is refused as 400. Nothing is
// reachable through a forged one anyway: the query always filters on the caller's own
// organization and mode, whatever the cursor says.
import { createHash } from 'node:crypto';
import type { KeyMode } from '../domain/platform.ts';
import { hasUnstorableCharacters } from '../domain/storable.ts';

/** What a page of the list is filtered on; a cursor belongs to exactly one of these. */
export interface ListFilter {
  orgId: string;
  mode: KeyMode;
  platform?: string;
  status?: string;
}

/** The last video of a page: the next page holds the videos after it, newest first. */
export interface SeekKey {
  createdAt: Date;
  videoId: string;
}

/** Longest cursor the list accepts (ours are about 150 characters; ids are at most 200). */
export const MAX_CURSOR_LENGTH = 512;

const FORMAT = 1;

interface CursorJson {
  v: number;
  t: string;
  id: string;
  f: string;
}

function fingerprint(filter: ListFilter, t: string, id: string): string {
  const fields = [FORMAT, filter.orgId, filter.mode, filter.platform ?? null, filter.status ?? null, t, id];
  return createHash('sha256').update(JSON.stringify(fields)).digest('base64url').slice(0, 22);
}

export function encodeCursor(filter: ListFilter, key: SeekKey): string {
  // created_at comes from the service clock in whole milliseconds (the VideoTracked event's
  // startedAt), so its ISO form is the stored value exactly.
  const t = key.createdAt.toISOString();
  const json: CursorJson = { v: FORMAT, t, id: key.videoId, f: fingerprint(filter, t, key.videoId) };
  return Buffer.from(JSON.stringify(json)).toString('base64url');
}

const FOUR_DIGIT_YEAR = /^\d{4}-/;

/** The seek key of a cursor issued for `filter`; null for anything else (malformed, edited, other filters). */
export function decodeCursor(cursor: string, filter: ListFilter): SeekKey | null {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const bytes = Buffer.from(cursor, 'base64url');
  // Node's decoder skips what it cannot read (a stray last character): only our own encoding counts.
  if (bytes.toString('base64url') !== cursor) return null;
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
  if (!json || typeof json !== 'object') return null;
  const { v, t, id, f } = json as Partial<CursorJson>;
  if (v !== FORMAT || typeof t !== 'string' || typeof id !== 'string' || typeof f !== 'string') return null;
  // The fingerprint is no signature: anyone can make one, for an id PostgreSQL would refuse.
  if (hasUnstorableCharacters(id)) return null;
  if (f !== fingerprint(filter, t, id)) return null;
  const createdAt = new Date(t);
  // Only what encodeCursor writes: the fingerprint already vouches for it, this keeps a
  // cursor of a future format (or a hash collision) from reaching the query as an Invalid Date.
  // A year of four digits: a Date goes back to 271,821 BC, PostgreSQL's timestamp to 4713 BC.
  if (!FOUR_DIGIT_YEAR.test(t) || Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== t) return null;
  return { createdAt, videoId: id };
}

/** The detail of the 400 for a cursor decodeCursor refuses. */
export const INVALID_CURSOR = 'cursor must be a next_cursor of this list, sent with the same platform and status filters';

/**
 * The RFC 8288 `Link` header to the next page: the request's own path with the same filters
 * and limit and the new cursor (a relative reference, so it holds behind any proxy's host).
 */
export function nextLink(requestUrl: string, query: { platform?: string; status?: string; limit: number; cursor: string }): string {
  const path = requestUrl.split('?', 1)[0]!;
  const params = new URLSearchParams();
  if (query.platform !== undefined) params.set('platform', query.platform);
  if (query.status !== undefined) params.set('status', query.status);
  params.set('limit', String(query.limit));
  params.set('cursor', query.cursor);
  return `<${path}?${params}>; rel="next"`;
}
