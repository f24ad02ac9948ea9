// The one place collectors touch the network, so that every platform maps transport trouble the
// same way: no answer, a timeout or a 5xx is `unavailable` (the slot is retried; 502 at track time);
// a success whose body is not JSON is `invalid` (the spec's 500 at track time).
import type { FetchResult } from '../collector.ts';
import { parseJsonLossless } from './json.ts';

export type Failure = Exclude<FetchResult, { status: 'ok' }>;
export type Unavailable = Extract<FetchResult, { status: 'unavailable' }>;

export const DEFAULT_FETCH_TIMEOUT_MS = 10_000;

/**
 * The largest answer read. The platforms' answers are tens of kilobytes; a body without end
 * would otherwise be held whole in memory and parsed, and past some hundred megabytes V8 aborts
 * the process (a string's size limit is not an exception anyone can catch).
 */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface RequestOptions {
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly timeoutMs: number;
  /** 'manual' hands 3xx answers back instead of following them (short-link resolution). */
  readonly redirect?: 'follow' | 'manual';
}

/** A non-5xx answer for the caller to read. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON (large integers as strings); undefined when the body is empty or not JSON. */
  readonly body: unknown;
}

export function isFailure(value: HttpAnswer | Failure | Response): value is Failure {
  return typeof value.status === 'string';
}

export function unavailable(message: string, retryAfter?: Date): Unavailable {
  return retryAfter ? { status: 'unavailable', message, retryAfter } : { status: 'unavailable', message };
}

/**
 * Sends one request and returns the raw response, or `unavailable` when the platform did not
 * answer in time or answered 5xx. `label` names the platform in messages.
 */
export async function send(label: string, url: string, options: RequestOptions): Promise<Response | Failure> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? 'GET',
      headers: options.headers,
      body: options.body,
      redirect: options.redirect ?? 'follow',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
  } catch (error) {
    return unavailable(`${label} did not answer: ${describe(error, options.timeoutMs)}`);
  }
  if (response.status >= 500) {
    await discard(response);
    return unavailable(`${label} answered HTTP ${response.status}`);
  }
  return response;
}

/** `send`, then the body as JSON. A 2xx that is not JSON is `invalid`; other statuses go to the caller. */
export async function requestJson(label: string, url: string, options: RequestOptions): Promise<HttpAnswer | Failure> {
  const response = await send(label, url, options);
  if (isFailure(response)) return response;
  let text: string | null;
  try {
    text = await boundedText(response);
  } catch (error) {
    // The body is read under the same timeout signal as the headers.
    return unavailable(`${label} did not answer: ${describe(error, options.timeoutMs)}`);
  }
  if (text === null) {
    if (response.ok) return { status: 'invalid', message: `${label} answered HTTP ${response.status} with a body over ${MAX_BODY_BYTES} bytes` };
    return { status: response.status, headers: response.headers, body: undefined };
  }
  let body: unknown;
  try {
    body = text === '' ? undefined : parseJsonLossless(text);
  } catch {
    body = undefined;
  }
  if (response.ok && body === undefined) {
    return { status: 'invalid', message: `${label} answered HTTP ${response.status} with a body that is not JSON` };
  }
  return { status: response.status, headers: response.headers, body };
}

/** The body as text, or null (and the rest left unread) when it is longer than MAX_BODY_BYTES. */
async function boundedText(response: Response): Promise<string | null> {
  if (Number(response.headers.get('content-length')) > MAX_BODY_BYTES) {
    await discard(response);
    return null;
  }
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream, which frees the connection.
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  // As response.text() decodes: UTF-8, a BOM dropped, bad bytes replaced.
  return new TextDecoder().decode(Buffer.concat(chunks, size));
}

/** Frees the connection of a response whose body we do not read. */
export async function discard(response: Response): Promise<void> {
  try {
    await response.body?.cancel();
  } catch {
    // Nothing to free.
  }
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterHeader(headers: Headers, now: Date): Date | undefined {
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const date = /^\d+$/.test(value) ? new Date(now.getTime() + Number(value) * 1000) : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `no answer within ${timeoutMs} ms`;
  }
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
  return cause ?? (error instanceof Error ? error.message : String(error));
}
