// Benchmark data made through the real code paths: organizations through the account
// commands, videos through the video decider's Track command appended in batches.
import type { Clock } from '../../src/clock.ts';
import { simulate } from '../../src/collect/simulator.ts';
import { deposit, issueKey, openOrganization } from '../../src/commands/account-commands.ts';
import { jobIdOf, newId, snapshotIdOf } from '../../src/commands/ids.ts';
import { decideVideo } from '../../src/domain/video-decide.ts';
import { initialVideoState, streamIdOfVideo } from '../../src/domain/video.ts';
import { appendError, type EventStore, type Position, type StreamAppend } from '../../src/eventstore/port.ts';

export interface SeededOrg {
  orgId: string;
  apiKey: string;
}

export async function seedOrganizations(store: EventStore, clock: Clock, count: number, usd = 1_000_000): Promise<SeededOrg[]> {
  const orgs: SeededOrg[] = [];
  for (let i = 0; i < count; i++) {
    const { orgId } = await openOrganization(store, clock, { name: `Bench ${i}`, email: `bench${i}@example.test`, plan: 'enterprise', rateLimit: 10_000_000 });
    const { apiKey } = await issueKey(store, clock, { orgId, name: 'bench', mode: 'live' });
    await deposit(store, clock, orgId, usd * 1_000_000, 'bench');
    orgs.push({ orgId, apiKey });
  }
  return orgs;
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A distinct 11-character YouTube id for each index. */
export function youtubeIdOf(index: number): string {
  let id = '';
  let n = index;
  for (let i = 0; i < 11; i++) {
    id += ALPHABET[n % 64];
    n = Math.floor(n / 64);
  }
  return id;
}

/** Tracks `count` YouTube videos spread over the organizations; returns the last position written. */
export async function seedVideos(
  store: EventStore,
  clock: Clock,
  orgs: readonly SeededOrg[],
  count: number,
  options: { durationDays: number; batch?: number; offset?: number; onProgress?: (done: number) => void },
): Promise<{ videoIds: string[]; position: Position | null }> {
  const batch = options.batch ?? 2_000;
  const videoIds: string[] = [];
  let position: Position | null = null;
  for (let start = 0; start < count; start += batch) {
    const appends: StreamAppend[] = [];
    for (let i = start; i < Math.min(count, start + batch); i++) {
      const org = orgs[i % orgs.length]!;
      const videoId = newId();
      const platformId = youtubeIdOf((options.offset ?? 0) + i);
      const videoLink = `https://www.youtube.com/watch?v=${platformId}`;
      const first = simulate({ platform: 'youtube', platformId, videoLink, slot: 0 });
      if (first.status !== 'ok') throw new Error(`simulator refused ${platformId}`);
      const events = decideVideo(
        {
          type: 'Track',
          videoId,
          jobId: jobIdOf(videoId),
          orgId: org.orgId,
          keyId: 'bench',
          mode: 'live',
          videoLink,
          platform: 'youtube',
          platformId,
          durationDays: options.durationDays,
          availableFunds: Number.MAX_SAFE_INTEGER,
          firstSnapshot: { snapshotId: snapshotIdOf(videoId, 0), provider: first.provider, metrics: first.metrics, metadata: first.metadata },
          now: clock.now(),
        },
        initialVideoState,
      );
      appends.push({ streamId: streamIdOfVideo(videoId), events, expectedRevision: 'no_stream' });
      videoIds.push(videoId);
    }
    const results = await store.appendMany(appends);
    for (const r of results) {
      if (!r.ok) throw appendError(r);
      position = r.result.position;
    }
    options.onProgress?.(videoIds.length);
  }
  return { videoIds, position };
}
