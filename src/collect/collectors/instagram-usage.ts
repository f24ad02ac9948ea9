// Meta throttles by rolling one-hour usage, reported as percentages in X-App-Usage and
// X-Business-Use-Case-Usage on every answer; at 100 % calls fail with codes 4/17/32/613 until
// estimated_time_to_regain_access (minutes) has passed. Reading the headers lets the collector stop
// at the limit instead of spending calls on refusals.
import { isRecord } from './json.ts';

export interface MetaUsage {
  /** The highest usage percentage reported (0 when no header). */
  readonly percent: number;
  /** Meta's estimate of the wait, in minutes (0 when it gives none). */
  readonly regainMinutes: number;
}

export function metaUsage(headers: Headers): MetaUsage {
  const entries: Record<string, unknown>[] = [];
  const app = parse(headers.get('x-app-usage'));
  if (isRecord(app)) entries.push(app);
  const business = parse(headers.get('x-business-use-case-usage'));
  if (isRecord(business)) {
    for (const list of Object.values(business)) if (Array.isArray(list)) entries.push(...list.filter(isRecord));
  }
  let percent = 0;
  let regainMinutes = 0;
  for (const entry of entries) {
    for (const key of ['call_count', 'total_cputime', 'total_time']) percent = Math.max(percent, numberOr0(entry[key]));
    regainMinutes = Math.max(regainMinutes, numberOr0(entry.estimated_time_to_regain_access));
  }
  return { percent, regainMinutes };
}

function numberOr0(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function parse(text: string | null): unknown {
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
