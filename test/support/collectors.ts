// Collectors that run a test's step each time a platform is asked, then answer as usual: what
// happens meanwhile (a video stopped, a lease taken over, the scheduler stopped) is the test's.
import type { Collector, VideoRef } from '../../src/collect/collector.ts';
import type { CollectorSet } from '../../src/collect/collectors.ts';

export function collectorsCalling(base: CollectorSet, during: (refs: readonly VideoRef[]) => unknown): CollectorSet {
  return Object.assign(Object.create(base) as CollectorSet, {
    forVideo: (mode: 'live' | 'test', platform: Parameters<CollectorSet['forVideo']>[1]): Collector => {
      const inner = base.forVideo(mode, platform);
      return {
        name: inner.name,
        async collect(refs) {
          await during(refs);
          return inner.collect(refs);
        },
      };
    },
  });
}
