// Short TikTok links (vm.tiktok.com/<code>/, vt.tiktok.com/<code>/, tiktok.com/t/<code>/) carry no
// video id: TikTok's own redirect leads to the long form /@user/video/<digits>. Resolved once, at
// track time, so that the stored platform id is the numeric one every later collection uses.
// Redirects are followed by hand, reading Location, so that no TikTok page body is ever fetched.
import type { FetchResult } from '../collector.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, discard, type Failure, isFailure, send, unavailable } from './http.ts';

export type ShortLinkResolution = { readonly status: 'resolved'; readonly platformId: string } | Failure;

export interface ShortLinkOptions {
  readonly fetchTimeoutMs?: number;
  /** Replaces the scheme and host of every TikTok URL fetched (tests: a local server). */
  readonly origin?: string;
  readonly maxRedirects?: number;
}

const LABEL = 'TikTok';
const SHORT_HOSTS = new Set(['vm.tiktok.com', 'vt.tiktok.com']);
// /@user/video/<id> is the long form; /v/<id>.html is the older mobile form some redirects use.
const VIDEO_PATH = /\/(?:@[^/]+\/video|v)\/(\d{1,20})(?:\.html)?(?:\/|$)/;

export function isTikTokShortLink(link: string): boolean {
  const url = parse(link);
  if (!url || !isTikTokHost(url.hostname)) return false;
  return SHORT_HOSTS.has(url.hostname.toLowerCase()) || /^\/t\/[^/]+\/?$/.test(url.pathname);
}

export async function resolveTikTokShortLink(link: string, options: ShortLinkOptions = {}): Promise<ShortLinkResolution> {
  const timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
  let url = parse(link);
  if (!url || !isTikTokHost(url.hostname)) return notFound(`Not a TikTok link: ${link}`);
  for (let hop = 0; hop <= (options.maxRedirects ?? 5); hop++) {
    const videoId = VIDEO_PATH.exec(url.pathname)?.[1];
    if (videoId) return { status: 'resolved', platformId: videoId };
    const target: URL = options.origin ? withOrigin(url, options.origin) : url;
    const response = await send(LABEL, target.href, { timeoutMs, redirect: 'manual', headers: { 'user-agent': 'vidtrack' } });
    if (isFailure(response)) return response;
    await discard(response);
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      const next = parse(location, target);
      if (!next) return { status: 'invalid', message: 'TikTok short link redirects to a malformed address' };
      url = next;
      // Only TikTok's own hops are followed; a redirect elsewhere is no video of TikTok's.
      if (!isTikTokHost(url.hostname) && url.origin !== target.origin) return notFound(`TikTok short link leads off TikTok: ${url.href}`);
      continue;
    }
    if (response.status === 429 || response.status === 403) return unavailable(`TikTok refused to resolve the short link (HTTP ${response.status})`);
    return notFound(`TikTok short link did not lead to a video (HTTP ${response.status})`);
  }
  return notFound('TikTok short link redirects too many times');
}

function notFound(message: string): Extract<FetchResult, { status: 'not_found' }> {
  return { status: 'not_found', deleted: false, message };
}

function withOrigin(url: URL, origin: string): URL {
  return new URL(`${url.pathname}${url.search}`, origin);
}

function isTikTokHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'tiktok.com' || host.endsWith('.tiktok.com');
}

function parse(link: string, base?: URL): URL | undefined {
  try {
    return new URL(link, base);
  } catch {
    return undefined;
  }
}
