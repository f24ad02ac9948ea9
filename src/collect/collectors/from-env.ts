// Which live collectors this process can run, read from the environment once at start-up.
// A platform without credentials has no live collector: it is listed in `missing`, and the
// composition root decides what serves it (COLLECTOR_FALLBACK is read by src/config.ts, and
// src/collect/collectors.ts falls back to the simulator or answers 502).
import type { Clock } from '../../clock.ts';
import { PLATFORMS, type Platform } from '../../domain/platform.ts';
import type { Collector } from '../collector.ts';
import { DEFAULT_FETCH_TIMEOUT_MS } from './http.ts';
import { InstagramCollector } from './instagram.ts';
import { TikTokCollector } from './tiktok.ts';
import { resolveTikTokShortLink, type ShortLinkResolution } from './tiktok-short-links.ts';
import { TwitterCollector } from './twitter.ts';
import { YouTubeCollector } from './youtube.ts';

export type Env = Readonly<Record<string, string | undefined>>;

export interface LiveCollectors {
  readonly collectors: Partial<Record<Platform, Collector>>;
  /** Platforms whose credentials are not set. */
  readonly missing: Platform[];
  /** Resolves a TikTok short link to its numeric id (TIKTOK_SHORT_LINK_URL overrides the host). */
  readonly resolveTikTokShortLink: (link: string) => Promise<ShortLinkResolution>;
}

/** The variables each platform needs, for messages that say what to set. */
export const CREDENTIAL_VARIABLES: Readonly<Record<Platform, readonly string[]>> = {
  youtube: ['YOUTUBE_API_KEY'],
  twitter: ['X_BEARER_TOKEN'],
  tiktok: ['TIKTOK_CLIENT_KEY', 'TIKTOK_CLIENT_SECRET'],
  instagram: ['INSTAGRAM_ACCESS_TOKEN', 'INSTAGRAM_USER_ID'],
};

/** Throws on a malformed setting (a bad URL or number), so that a typo stops start-up, not collection. */
export function liveCollectorsFromEnv(env: Env, clock: Clock): LiveCollectors {
  const fetchTimeoutMs = positiveInteger(env, 'COLLECTOR_FETCH_TIMEOUT_MS') ?? DEFAULT_FETCH_TIMEOUT_MS;
  const value = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  const build: Record<Platform, () => Collector> = {
    youtube: () =>
      new YouTubeCollector({
        apiKey: value('YOUTUBE_API_KEY')!,
        baseUrl: url(env, 'YOUTUBE_API_URL'),
        dailyQuotaUnits: positiveInteger(env, 'YOUTUBE_DAILY_QUOTA'),
        clock,
        fetchTimeoutMs,
      }),
    twitter: () => new TwitterCollector({ bearerToken: value('X_BEARER_TOKEN')!, baseUrl: url(env, 'X_API_URL'), clock, fetchTimeoutMs }),
    tiktok: () =>
      new TikTokCollector({
        clientKey: value('TIKTOK_CLIENT_KEY')!,
        clientSecret: value('TIKTOK_CLIENT_SECRET')!,
        baseUrl: url(env, 'TIKTOK_API_URL'),
        clock,
        fetchTimeoutMs,
      }),
    instagram: () =>
      new InstagramCollector({
        accessToken: value('INSTAGRAM_ACCESS_TOKEN')!,
        userId: value('INSTAGRAM_USER_ID')!,
        baseUrl: url(env, 'INSTAGRAM_API_URL'),
        clock,
        fetchTimeoutMs,
      }),
  };
  const collectors: Partial<Record<Platform, Collector>> = {};
  const missing: Platform[] = [];
  for (const platform of PLATFORMS) {
    if (CREDENTIAL_VARIABLES[platform].every((name) => value(name) !== undefined)) collectors[platform] = build[platform]();
    else missing.push(platform);
  }
  const shortLinkOrigin = url(env, 'TIKTOK_SHORT_LINK_URL');
  return {
    collectors,
    missing,
    resolveTikTokShortLink: (link) => resolveTikTokShortLink(link, { fetchTimeoutMs, origin: shortLinkOrigin }),
  };
}

function url(env: Env, name: string): string | undefined {
  const text = env[name]?.trim();
  if (!text) return undefined;
  const parsed = URL.canParse(text) ? new URL(text) : undefined;
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new Error(`${name} is not an http(s) URL: ${text}`);
  return text;
}

function positiveInteger(env: Env, name: string): number | undefined {
  const text = env[name]?.trim();
  if (!text) return undefined;
  if (!/^\d+$/.test(text) || Number(text) <= 0) throw new Error(`${name} must be a positive integer, not "${text}"`);
  return Number(text);
}
