// Helpers for the scheduler-round tests: track through the API, read a video back, and
// look at the event log itself (the read models would hide a duplicate slot).
import assert from 'node:assert/strict';
import { HOUR_MS } from '../../src/clock.ts';
import type { TestService } from '../support/service.ts';

let counter = 0;

/** A YouTube link whose id is unique per call and ends in `suffix` (simulator rules key on the ending). */
export function youtubeLink(suffix = ''): string {
  counter++;
  const id = `v${String(counter).padStart(10 - suffix.length, '0')}${suffix}`.slice(-11);
  return `https://www.youtube.com/watch?v=${id}`;
}

export async function track(service: TestService, apiKey: string, videoLink: string, durationDays = 1): Promise<string> {
  const response = await service.app.inject({
    method: 'POST',
    url: '/api/v1/videos/track',
    headers: { 'x-api-key': apiKey },
    payload: { video_link: videoLink, duration_days: durationDays },
  });
  assert.equal(response.statusCode, 201, response.body);
  return response.json().id;
}

export interface VideoBody {
  id: string;
  status: string;
  days_remaining: number;
  is_deleted: boolean;
  snapshots: Array<{ snapshot_time: string; snapshot_id: string; provider: string }>;
}

export async function getVideo(service: TestService, apiKey: string, id: string): Promise<VideoBody> {
  const response = await service.app.inject({ url: `/api/v1/videos/${id}`, headers: { 'x-api-key': apiKey } });
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}

export async function getUsage(service: TestService, apiKey: string) {
  const response = await service.app.inject({ url: '/api/v1/usage', headers: { 'x-api-key': apiKey } });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as {
    balance_usd: number;
    total_snapshots: number;
    active_videos: number;
    uncharged_usage_usd: number;
    total_charged_usd: number;
  };
}

/** Events of one type in log order, optionally only one video's. */
export async function eventsOf(service: TestService, type: string, videoId?: string): Promise<Array<Record<string, any>>> {
  const { rows } = await service.db.pool.query(
    `SELECT data FROM es.events WHERE type = $1 AND ($2::text IS NULL OR stream_id = 'video-' || $2) ORDER BY position`,
    [type, videoId ?? null],
  );
  return rows.map((r) => r.data);
}

/** Slots of a video's SnapshotRecorded events, in log order. */
export async function recordedSlots(service: TestService, videoId: string): Promise<number[]> {
  return (await eventsOf(service, 'SnapshotRecorded', videoId)).map((d) => d.slot);
}

export function assertNoDuplicateSlots(slots: number[], label = 'slots'): void {
  assert.equal(new Set(slots).size, slots.length, `${label} recorded twice: ${slots.join(',')}`);
}

export function assertAscending(times: string[]): void {
  for (let i = 1; i < times.length; i++) {
    assert.ok(Date.parse(times[i]!) > Date.parse(times[i - 1]!), `snapshot ${i} (${times[i]}) is not after ${times[i - 1]}`);
  }
}

/** Advances the service clock one hour at a time, running one collection round after each step. */
export async function collectHours(service: TestService, hours: number, collect: () => Promise<unknown>): Promise<void> {
  for (let h = 0; h < hours; h++) {
    service.clock.advance(HOUR_MS);
    await collect();
  }
}
