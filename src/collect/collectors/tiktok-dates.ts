// The Research API only finds a video inside a creation-date window (start_date..end_date, at most
// 30 days apart), even when asked for it by id. A TikTok id carries its creation time in its top
// 32 bits (Unix seconds), so each video's window can be known without asking, and videos created
// close together can share one query.
import type { VideoRef } from '../collector.ts';

const DAY_MS = 86_400_000;
/** Creation days one group may span; padded by a day on each side the window stays under 30 days. */
const MAX_GROUP_SPAN_DAYS = 27;
/** A day either side, in case TikTok's dates are not exactly UTC days. */
const PADDING_DAYS = 1;
/** Ids before TikTok's launch decode to nonsense: such videos get the recent window instead. */
const EARLIEST = Date.UTC(2016, 0, 1);

/** The UTC day (days since 1970) a video was created, or undefined when the id does not say. */
export function creationDay(videoId: string, now: Date): number | undefined {
  if (!/^\d{1,20}$/.test(videoId)) return undefined;
  const createdMs = Number(BigInt(videoId) >> 32n) * 1000;
  if (createdMs < EARLIEST || createdMs > now.getTime() + DAY_MS) return undefined;
  return Math.floor(createdMs / DAY_MS);
}

export interface DateWindow {
  readonly startDate: string;
  readonly endDate: string;
}

/**
 * Groups of at most `size` videos whose creation days fit in one query window. Videos whose day is
 * unknown are grouped apart and searched in the most recent window.
 */
export function groupByCreation(refs: readonly VideoRef[], size: number, now: Date): VideoRef[][] {
  const dated = refs
    .map((ref) => ({ ref, day: creationDay(ref.platformId, now) }))
    .filter((entry): entry is { ref: VideoRef; day: number } => entry.day !== undefined)
    .sort((a, b) => a.day - b.day);
  const groups: VideoRef[][] = [];
  let current: VideoRef[] = [];
  let firstDay = 0;
  for (const { ref, day } of dated) {
    if (current.length === size || (current.length > 0 && day - firstDay > MAX_GROUP_SPAN_DAYS)) {
      groups.push(current);
      current = [];
    }
    if (current.length === 0) firstDay = day;
    current.push(ref);
  }
  if (current.length > 0) groups.push(current);
  const undated = refs.filter((ref) => creationDay(ref.platformId, now) === undefined);
  for (let start = 0; start < undated.length; start += size) groups.push(undated.slice(start, start + size));
  return groups;
}

/** The query window of a group made by groupByCreation; never ends after today. */
export function windowFor(group: readonly VideoRef[], now: Date): DateWindow {
  const today = Math.floor(now.getTime() / DAY_MS);
  const days = group.map((ref) => creationDay(ref.platformId, now)).filter((day): day is number => day !== undefined);
  if (days.length === 0) {
    return { startDate: yyyymmdd(today - MAX_GROUP_SPAN_DAYS - 2 * PADDING_DAYS), endDate: yyyymmdd(today) };
  }
  const end = Math.min(Math.max(...days) + PADDING_DAYS, today);
  return { startDate: yyyymmdd(Math.min(...days) - PADDING_DAYS), endDate: yyyymmdd(end) };
}

function yyyymmdd(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '');
}
