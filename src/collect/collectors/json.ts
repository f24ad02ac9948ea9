// Reading platform answers without trusting them. TikTok ids (and, one day, any count) exceed
// 2^53, which JSON.parse silently rounds; and any field may be missing or of the wrong type, which
// must become an `invalid` result rather than a crash or a wrong number in a snapshot.
import { countOf, MAX_COUNT } from '../../domain/storable.ts';

/** Thrown by the readers below; collectors turn it into an `invalid` result. */
export class Malformed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Malformed';
  }
}

// A JSON string (skipped as is) or a number literal. Strings are matched first so that digits
// inside them are never touched.
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/** Sixteen digits in a row: the shortest run that can be an integer beyond 2^53. */
const LONG_DIGITS = /\d{16}/;

/**
 * JSON.parse, except that integers beyond Number.MAX_SAFE_INTEGER come back as their exact decimal
 * strings. Node 20 has no reviver access to the source text, hence the rewrite before parsing.
 * Throws SyntaxError on malformed text, as JSON.parse does.
 */
export function parseJsonLossless(text: string): unknown {
  // Parsed first, in linear time: the rewrite's scan is quadratic on some malformed text (an
  // unclosed string of escaped quotes is matched again from each quote), and well-formed text
  // without a long run of digits, nearly every answer, needs no rewrite at all.
  const parsed: unknown = JSON.parse(text);
  if (!LONG_DIGITS.test(text)) return parsed;
  const rewritten = text.replace(TOKEN, (token) =>
    token.startsWith('"') || !/^-?\d+$/.test(token) || Number.isSafeInteger(Number(token)) ? token : `"${token}"`,
  );
  return JSON.parse(rewritten);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function record(value: unknown, what: string): Record<string, unknown> {
  if (!isRecord(value)) throw new Malformed(`${what} is not an object`);
  return value;
}

export function array(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new Malformed(`${what} is not an array`);
  return value;
}

export function string(value: unknown, what: string): string {
  if (typeof value !== 'string') throw new Malformed(`${what} is not a string`);
  return value;
}

/** A text field that platforms leave out when empty (descriptions, captions). */
export function optionalString(value: unknown, what: string): string {
  return value === undefined || value === null ? '' : string(value, what);
}

/**
 * An id that may arrive as a JSON string or a JSON number (TikTok sends numbers; after
 * parseJsonLossless the large ones are already strings). Always returned as a decimal string.
 */
export function id(value: unknown, what: string): string {
  const read = idOrUndefined(value);
  if (read === undefined) throw new Malformed(`${what} is not an id`);
  return read;
}

function idOrUndefined(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  return undefined;
}

/**
 * One item of an answer's list with its `id`, or undefined when it is no object or has no id.
 * The caller skips such an item: it cannot be matched to a video, so the video it may have been
 * answers as one the platform did not return, and the other items of the answer stay good.
 */
export function identified(item: unknown): { id: string; fields: Record<string, unknown> } | undefined {
  const itemId = isRecord(item) ? idOrUndefined(item.id) : undefined;
  return itemId === undefined ? undefined : { id: itemId, fields: item as Record<string, unknown> };
}

/**
 * A count as a canonical decimal string, or undefined when the platform left it out (hidden
 * likes). Accepts JSON numbers (X, TikTok) and digit strings (YouTube); what a count is, the
 * domain decides (up to 2^63 − 1, what the read models hold).
 */
export function count(value: unknown, what: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  const canonical = countOf(value);
  if (canonical === null) throw new Malformed(`${what} is not an integer from 0 to ${MAX_COUNT}`);
  return canonical;
}

/** Metrics the platform left out are omitted from the snapshot, not written as undefined. */
export function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
