// VideoRefs as the scheduler builds them, for collector tests.
import type { VideoRef } from '../../src/collect/collector.ts';
import type { Platform } from '../../src/domain/platform.ts';

export function ref(platform: Platform, platformId: string, videoLink = `https://example.test/${platformId}`): VideoRef {
  return { platform, platformId, videoLink, slot: 0 };
}
