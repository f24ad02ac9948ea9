// Which collector serves a video: test mode always the simulator; live mode the platform's
// own collector, or the simulator when COLLECTOR_FALLBACK=simulator and the platform has no
// credentials, or else a collector that says clearly what is missing.
import type { KeyMode, Platform } from '../domain/platform.ts';
import { checkedCollector } from './checked-collector.ts';
import type { Collector } from './collector.ts';
import { CREDENTIAL_VARIABLES } from './collectors/from-env.ts';
import { simulatedTikTokId, simulatorCollector } from './simulator.ts';

export type ShortLinkResult = { platformId: string } | { status: 'not_found' | 'unavailable' | 'invalid'; message: string };

export interface CollectorSet {
  forVideo(mode: KeyMode, platform: Platform): Collector;
  /** Resolves a TikTok short link (vm./vt./t/) to its numeric video id. */
  resolveTikTokShortLink(mode: KeyMode, link: string, shortCode: string): Promise<ShortLinkResult>;
  /** Platforms that have neither credentials nor a fallback: tracking them live answers 502. */
  readonly unavailable: readonly Platform[];
}

export interface CollectorSetOptions {
  live: Partial<Record<Platform, Collector>>;
  fallbackToSimulator: boolean;
  resolveShortLink?: (link: string) => Promise<ShortLinkResult>;
}

function missingCollector(platform: Platform): Collector {
  const message = `No ${platform} API credentials are configured: set ${CREDENTIAL_VARIABLES[platform].join(' and ')} (or COLLECTOR_FALLBACK=simulator)`;
  return { name: `${platform}-unconfigured`, collect: async (refs) => refs.map(() => ({ status: 'unavailable' as const, message })) };
}

export function createCollectorSet(options: CollectorSetOptions): CollectorSet {
  const chosen = {} as Record<Platform, Collector>;
  const unavailable: Platform[] = [];
  const simulator = checkedCollector(simulatorCollector);
  for (const platform of ['tiktok', 'youtube', 'instagram', 'twitter'] as const) {
    const live = options.live[platform];
    if (live) chosen[platform] = checkedCollector(live);
    else if (options.fallbackToSimulator) chosen[platform] = simulator;
    else {
      chosen[platform] = missingCollector(platform);
      unavailable.push(platform);
    }
  }
  return {
    unavailable,
    forVideo: (mode, platform) => (mode === 'test' ? simulator : chosen[platform]),
    async resolveTikTokShortLink(mode, link, shortCode) {
      if (mode === 'test' || chosen.tiktok === simulator) return { platformId: simulatedTikTokId(shortCode) };
      if (!options.resolveShortLink) return { status: 'unavailable', message: `No tiktok API credentials are configured: set ${CREDENTIAL_VARIABLES.tiktok.join(' and ')}` };
      return options.resolveShortLink(link);
    },
  };
}
