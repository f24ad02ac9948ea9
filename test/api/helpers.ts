// Small helpers shared by the API tests: a client bound to one key, unique video links,
// the spec's error shapes, exact money, and walking the service clock hour by hour.
import assert from 'node:assert/strict';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { HOUR_MS } from '../../src/clock.ts';
import { collectDue } from '../../src/collect/work.ts';
import type { Platform } from '../../src/domain/platform.ts';
import type { TestService } from '../support/service.ts';

export const API = '/api/v1';
export type Response = LightMyRequestResponse;
type Headers = Record<string, string | string[]>;

/** Requests under the API prefix, sent with `apiKey` as X-API-Key (none when undefined). */
export function client(service: TestService, apiKey?: string, extra: Partial<InjectOptions> = {}) {
  const headersWith = (more: Headers = {}): Headers => ({ ...(apiKey === undefined ? {} : { 'x-api-key': apiKey }), ...more });
  const inject = (options: InjectOptions) => service.app.inject({ ...extra, ...options });
  return {
    get: (path: string, headers?: Headers) => inject({ method: 'GET', url: API + path, headers: headersWith(headers) }),
    post: (path: string, payload?: InjectOptions['payload'], headers?: Headers) =>
      inject({ method: 'POST', url: API + path, headers: headersWith(headers), ...(payload === undefined ? {} : { payload }) }),
    track: (videoLink: unknown, durationDays: unknown, headers?: Headers) =>
      inject({ method: 'POST', url: `${API}/videos/track`, headers: headersWith(headers), payload: { video_link: videoLink, duration_days: durationDays } as object }),
    video: (id: string) => inject({ method: 'GET', url: `${API}/videos/${encodeURIComponent(id)}`, headers: headersWith() }),
    stop: (id: string) => inject({ method: 'POST', url: `${API}/videos/${encodeURIComponent(id)}/stop`, headers: headersWith() }),
    list: (query = '') => inject({ method: 'GET', url: `${API}/videos${query ? `?${query}` : ''}`, headers: headersWith() }),
    usage: () => inject({ method: 'GET', url: `${API}/usage`, headers: headersWith() }),
  };
}
export type Client = ReturnType<typeof client>;

// ---- client addresses -------------------------------------------------------------------

/**
 * A client address no other test used: failed authentications are rate limited per address,
 * so tests that fail on purpose each come from their own.
 */
let addresses = 0;
export function freshAddress(): string {
  addresses++;
  return `10.${(addresses >> 16) & 255}.${(addresses >> 8) & 255}.${addresses & 255}`;
}

// ---- video links ------------------------------------------------------------------------

let counter = 0;

/**
 * A platform id no other call returns. `ending` picks a simulator rule (404 private,
 * 410 deleted later, 500 invalid answer, 503 unreachable); without one the id ends in a
 * character no rule uses.
 */
export function platformId(platform: Platform, ending = ''): string {
  const n = ++counter;
  switch (platform) {
    case 'youtube':
      return `yt${n.toString(36)}`.padEnd(11 - ending.length, 'Q') + ending;
    case 'instagram':
      return `C${n.toString(36)}x${ending}`;
    case 'tiktok':
      return `7${String(n).padStart(15, '0')}${ending || '1'}`;
    case 'twitter':
      return `1${String(n).padStart(15, '0')}${ending || '7'}`;
  }
}

/** The plainest accepted link shape for a platform id. */
export function linkOf(platform: Platform, id: string): string {
  switch (platform) {
    case 'youtube':
      return `https://www.youtube.com/watch?v=${id}`;
    case 'tiktok':
      return `https://www.tiktok.com/@creator/video/${id}`;
    case 'instagram':
      return `https://www.instagram.com/p/${id}/`;
    case 'twitter':
      return `https://x.com/someone/status/${id}`;
  }
}

/** A fresh, trackable (or, with `ending`, simulator-rule) video link. */
export function newLink(platform: Platform = 'youtube', ending = ''): string {
  return linkOf(platform, platformId(platform, ending));
}

// ---- responses --------------------------------------------------------------------------

/** Asserts the status and the spec's `error` message; returns the parsed body. */
export function expectError(response: Response, status: number, error: string): Record<string, unknown> {
  assert.equal(response.statusCode, status, response.body);
  const body = response.json();
  assert.equal(body.error, error, response.body);
  return body;
}

/** 400 `Invalid request` whose details are { field, message } objects, one of them naming `field`. */
export function expectInvalid(response: Response, field: string): Array<{ field: string; message: string }> {
  const body = expectError(response, 400, 'Invalid request');
  const details = body.details as Array<{ field: string; message: string }>;
  assert.ok(Array.isArray(details) && details.length > 0, `details must be a non-empty array: ${response.body}`);
  for (const detail of details) {
    assert.deepEqual(Object.keys(detail).sort(), ['field', 'message'], response.body);
    assert.equal(typeof detail.field, 'string');
    assert.equal(typeof detail.message, 'string');
    assert.ok(detail.message.length > 0);
  }
  assert.ok(
    details.some((d) => d.field === field),
    `details should name ${field}: ${response.body}`,
  );
  return details;
}

export function expectStatus(response: Response, status: number): Record<string, any> {
  assert.equal(response.statusCode, status, response.body);
  return response.json();
}

/** Tracks a video and returns the 201 body. */
export async function tracked(api: Client, videoLink = newLink(), days = 1): Promise<Record<string, any>> {
  return expectStatus(await api.track(videoLink, days), 201);
}

// ---- money ------------------------------------------------------------------------------

/** Expected USD figures are computed in integer micro-USD and turned into a number once. */
export const usd = (micros: number): number => micros / 1_000_000;
export const SNAPSHOT_MICROS = 15_000;
export const costOfDays = (days: number): number => usd(days * 24 * SNAPSHOT_MICROS);

// ---- time -------------------------------------------------------------------------------

/** Moves the service clock `hours` hours on, running one scheduler collection round per hour. */
export async function passHours(service: TestService, hours: number): Promise<void> {
  for (let i = 0; i < hours; i++) {
    service.clock.advance(HOUR_MS);
    await collectDue(service.work);
  }
  await service.settle();
}

export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const DECIMAL = /^(0|[1-9][0-9]*)$/;
