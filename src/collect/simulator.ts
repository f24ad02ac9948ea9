// The simulator collector: deterministic, plausible growth with no network. It serves test
// keys and the embedded default. Its rules, keyed on the end of the platform id:
//   ...404 -> private or absent (404 at track)
//   ...410 -> deleted on the platform after the first snapshot (error after 3 failed hours)
//   ...500 -> an invalid provider response (the spec's 500 at track)
//   ...503 -> the platform is unreachable (502 at track, a retried slot while tracking)
//   ...999 -> a title and creator carrying HTML markup, as a hostile uploader would write them
//             (platform text is untrusted: every page must show it as text)
import type { Metrics, Platform, VideoMetadata } from '../domain/platform.ts';
import type { Collector, FetchResult, VideoRef } from './collector.ts';

export const SIMULATOR = 'simulator';

/** FNV-1a: a stable 32-bit seed per video, so every run grows the same curve. */
function seedOf(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** A count that starts at `base` and grows by `perHour` (plus a small deterministic wobble) each slot. */
function grow(seed: number, base: number, perHour: number, slot: number): bigint {
  const wobble = BigInt(((seed >>> (slot % 16)) & 0xff) * slot);
  return BigInt(base) + BigInt(perHour) * BigInt(slot) + wobble / 8n;
}

function metricsOf(platform: Platform, seed: number, slot: number): Metrics {
  const views = grow(seed, 1_000 + (seed % 50_000), 200 + (seed % 900), slot);
  const likes = views / 12n;
  const comments = views / 150n;
  const shares = views / 90n;
  const saves = views / 70n;
  switch (platform) {
    case 'tiktok':
      return { views: `${views}`, likes: `${likes}`, comments: `${comments}`, shares: `${shares}`, saves: `${saves}` };
    case 'youtube':
      return { views: `${views}`, likes: `${likes}`, comments: `${comments}` };
    case 'instagram':
      return { likes: `${likes}`, comments: `${comments}`, saves: `${saves}` };
    case 'twitter':
      // DESIGN §8: comments = replies, shares = retweets.
      return { views: `${views}`, likes: `${likes}`, comments: `${comments}`, shares: `${shares}`, retweets: `${shares}`, replies: `${comments}` };
  }
}

/** Markup an uploader may put in a title: shown escaped, it reads as text; unescaped, it runs. */
export const HOSTILE_TITLE = '<script>alert("xss")</script><img src=x onerror="alert(1)"> hostile title';

function metadataOf(ref: VideoRef, seed: number): VideoMetadata {
  if (ref.platformId.endsWith('999')) {
    return { title: `${HOSTILE_TITLE} ${ref.platformId}`, creator: '<b onmouseover="alert(2)">creator</b>', description: `<iframe src="javascript:alert(3)"></iframe> ${ref.videoLink}` };
  }
  return {
    title: `Simulated ${ref.platform} video ${ref.platformId}`,
    creator: `creator_${(seed % 10_000).toString().padStart(4, '0')}`,
    description: `Deterministic simulated metrics for ${ref.videoLink}`,
  };
}

export function simulate(ref: VideoRef): FetchResult {
  const id = ref.platformId;
  if (id.endsWith('404')) return { status: 'not_found', deleted: false, message: 'video is private or does not exist' };
  if (id.endsWith('500')) return { status: 'invalid', message: 'simulated invalid provider response' };
  if (id.endsWith('503')) return { status: 'unavailable', message: 'simulated platform outage' };
  if (id.endsWith('410') && ref.slot > 0) return { status: 'not_found', deleted: true, message: 'video was deleted on the platform' };
  const seed = seedOf(`${ref.platform}:${id}`);
  return { status: 'ok', metrics: metricsOf(ref.platform, seed, ref.slot), metadata: metadataOf(ref, seed), provider: SIMULATOR };
}

export const simulatorCollector: Collector = {
  name: SIMULATOR,
  async collect(refs) {
    return refs.map(simulate);
  },
};

/** In simulation a TikTok short code stands for a stable 19-digit video id. */
export function simulatedTikTokId(shortCode: string): string {
  return `7${(BigInt(seedOf(shortCode)) * 1_000_000_007n).toString().padStart(18, '0').slice(-18)}`;
}
