// What may enter the log: the one place that says what a count is and what text is.
//
// PostgreSQL text and jsonb refuse U+0000 and unpaired UTF-16 surrogates, and one refused row
// fails the whole multi-row statement it is in (DESIGN §9); read models keep counts in bigint.
// So values are refused or cleaned where they arrive, never left for a store to choke on: a
// client's link with such characters is refused; a platform's text is cleaned; a platform's
// count that is not a bigint is a malformed answer.
import type { Metrics, VideoMetadata } from './platform.ts';

/** The largest count the read models hold: PostgreSQL bigint, 2^63 − 1. */
export const MAX_COUNT = 2n ** 63n - 1n;

/** The largest rate limit the read models hold: PostgreSQL integer, 2^31 − 1 requests a minute. */
export const MAX_RATE_LIMIT = 2 ** 31 - 1;

/**
 * Longest platform text kept, in UTF-16 code units. Generous beside the platforms' own limits
 * (X long posts reach 25,000 characters), so only absurd answers are cut.
 */
export const TEXT_LIMITS: Readonly<Record<keyof VideoMetadata, number>> = { title: 1_000, creator: 1_000, description: 30_000 };

/** U+0000, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');
/** NUL or any surrogate: one quick scan, so text without either (nearly all of it) skips the exact one. */
const MAYBE_UNSTORABLE = /[\u0000\ud800-\udfff]/;

/** True when the text holds a character no store of ours can keep (NUL, a lone surrogate). */
export function hasUnstorableCharacters(text: string): boolean {
  return MAYBE_UNSTORABLE.test(text) && UNSTORABLE.test(text);
}

/**
 * Where a value holds such text, in a string or a key, at any depth: the dotted path of the first
 * (`events.0`; '' for the value itself), or null when it holds none. Walked with a stack, not
 * recursion: a request body may nest deeper than the call stack goes.
 */
export function unstorableTextPath(value: unknown): string | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value: item, path } = next;
    if (typeof item === 'string') {
      if (hasUnstorableCharacters(item)) return path;
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        const childPath = path ? `${path}.${key}` : key;
        if (hasUnstorableCharacters(key)) return childPath;
        pending.push({ value: child, path: childPath });
      }
    }
  }
  return null;
}

/** The text without NUL and lone surrogates, cut to `maxLength` code units without splitting a pair. */
export function cleanText(text: string, maxLength: number): string {
  const clean = MAYBE_UNSTORABLE.test(text) ? text.replace(UNSTORABLE_ALL, '') : text;
  if (clean.length <= maxLength) return clean;
  const cut = clean.slice(0, maxLength);
  // A high surrogate left last would be lone once its partner is cut off.
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** The metadata with its texts cleaned: the same object when they already were (nearly always). */
export function cleanMetadata(metadata: VideoMetadata): VideoMetadata {
  const title = cleanText(metadata.title, TEXT_LIMITS.title);
  const creator = cleanText(metadata.creator, TEXT_LIMITS.creator);
  const description = cleanText(metadata.description, TEXT_LIMITS.description);
  if (title === metadata.title && creator === metadata.creator && description === metadata.description) return metadata;
  return { title, creator, description };
}

/** Longest provider name kept (ours are a collector's name, such as `simulator`). */
const PROVIDER_LIMIT = 200;

/**
 * A platform's answer with its texts (provider, metadata) cleaned: the same object when they
 * already were, as nearly always, so the answer is not copied at each check it passes.
 */
export function cleanAnswerTexts<T extends { provider: string; metadata: VideoMetadata }>(answer: T): T {
  const provider = cleanText(answer.provider, PROVIDER_LIMIT);
  const metadata = cleanMetadata(answer.metadata);
  return provider === answer.provider && metadata === answer.metadata ? answer : { ...answer, provider, metadata };
}

const MAX_COUNT_DIGITS = MAX_COUNT.toString();

/**
 * True when the value is a count in its canonical form (digits, no leading zero, at most
 * MAX_COUNT). Checked character by character, with no match and no copy: it runs for every
 * metric of every snapshot, twice (at the collector's edge and in the decider). A text longer
 * than MAX_COUNT's digits is refused unread.
 */
function isCanonicalCount(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const length = value.length;
  if (length === 0 || length > MAX_COUNT_DIGITS.length || (length > 1 && value.charCodeAt(0) === 48)) return false;
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  // Fewer digits than MAX_COUNT are below it; as many compare as text.
  return length < MAX_COUNT_DIGITS.length || value <= MAX_COUNT_DIGITS;
}

/**
 * A count as its canonical decimal string, or null when the value is not one: a non-negative
 * integer up to MAX_COUNT, given as a JSON number (exact, so at most 2^53 − 1) or a digit string
 * (leading zeros allowed).
 */
export function countOf(value: unknown): string | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? String(value) : null;
  if (typeof value !== 'string') return null;
  let start = 0;
  while (start < value.length - 1 && value.charCodeAt(start) === 48) start++;
  const digits = start === 0 ? value : value.slice(start);
  return isCanonicalCount(digits) ? digits : null;
}

/** Why the metrics cannot be stored (the first bad one named), or null when every one is a count. */
export function metricsProblem(metrics: Metrics): string | null {
  for (const name in metrics) {
    const value: unknown = metrics[name as keyof Metrics];
    // Left out (undefined, or null: the read model stores both as NULL), or a count.
    if (value == null || isCanonicalCount(value)) continue;
    return `${name} is not a count from 0 to ${MAX_COUNT}: ${describe(value)}`;
  }
  return null;
}

/** A short, storable rendering of a refused value for messages. */
function describe(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  return cleanText(text.length > 40 ? `${text.slice(0, 40)}… (${text.length} characters)` : text, 80);
}
