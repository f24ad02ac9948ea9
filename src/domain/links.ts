// Video link -> platform + platform id (spec §1, research/platform-apis.md §5). Pure: no I/O.
//
// The scheme and host are matched against an exact list, not through `new URL`: the WHATWG
// parser forgives backslashes, tabs inside the text, percent-encoded hosts and user-info, and a
// link we accept is stored and shown back as given, so it has to be the plain shape we document.
import type { Platform } from './platform.ts';
import { hasUnstorableCharacters } from './storable.ts';

export type ParsedLink = {
  platform: Platform;
  /** The platform's id of the video; null only for a TikTok short link, resolved later by its redirect. */
  platformId: string | null;
  /** The code of a TikTok short link (`vm.tiktok.com/<code>/`, `vt.tiktok.com/<code>/`, `tiktok.com/t/<code>/`). */
  shortCode?: string;
  /** The link as given, trimmed. */
  videoLink: string;
};

export type LinkError = { error: string };

export function isLinkError(result: ParsedLink | LinkError): result is LinkError {
  return 'error' in result;
}

/** One line per platform, for error messages and documentation. */
export const ACCEPTED_LINK_SHAPES: Readonly<Record<Platform, string>> = {
  tiktok: 'TikTok: https://www.tiktok.com/@<user>/video/<id>, https://vm.tiktok.com/<code>/, https://vt.tiktok.com/<code>/, https://www.tiktok.com/t/<code>/',
  youtube:
    'YouTube: https://www.youtube.com/watch?v=<id>, https://youtu.be/<id>, https://www.youtube.com/embed/<id>, https://www.youtube.com/shorts/<id>, https://www.youtube.com/live/<id>',
  instagram: 'Instagram: https://www.instagram.com/p/<code>/, https://www.instagram.com/reel/<code>/ (also /reels/ and /tv/)',
  twitter: 'X/Twitter: https://x.com/<user>/status/<id> or https://twitter.com/<user>/status/<id>',
};

/** Longer than any real video link; bounds the work done on hostile input. */
export const MAX_LINK_LENGTH = 2048;

const YOUTUBE_ID = /^[A-Za-z0-9_-]{11}$/;
/** TikTok and X ids: signed 64-bit snowflakes written in decimal, kept as strings (they exceed 2^53). */
const isSnowflake = (id: string) => /^[1-9][0-9]{0,18}$/.test(id) && BigInt(id) <= 2n ** 63n - 1n;
const INSTAGRAM_CODE = /^[A-Za-z0-9_-]{1,64}$/;
const INSTAGRAM_USER = /^[A-Za-z0-9._]{1,30}$/;
const TIKTOK_USER = /^@[^@\s]{1,64}$/;
const TIKTOK_SHORT_CODE = /^[A-Za-z0-9_-]{1,32}$/;
const TWITTER_USER = /^[A-Za-z0-9_]{1,15}$/;

type HostKind = { platform: Platform; parse: (segments: string[], query: URLSearchParams) => Ids | null };
type Ids = { platformId: string | null; shortCode?: string };

const youtubeSite: HostKind = { platform: 'youtube', parse: parseYoutubePath };
const youtubeMusic: HostKind = { platform: 'youtube', parse: (s, q) => (isExactly(s, 'watch') ? youtubeWatch(q) : null) };
const youtubeNoCookie: HostKind = { platform: 'youtube', parse: (s) => (s.length === 2 && s[0] === 'embed' ? youtubeId(s[1]) : null) };
const youtubeShort: HostKind = { platform: 'youtube', parse: (s) => (s.length === 1 ? youtubeId(s[0]) : null) };
const tiktokSite: HostKind = { platform: 'tiktok', parse: parseTiktokPath };
const tiktokShort: HostKind = { platform: 'tiktok', parse: (s) => (s.length === 1 ? tiktokShortCode(s[0]) : null) };
const instagramSite: HostKind = { platform: 'instagram', parse: parseInstagramPath };
const twitterSite: HostKind = { platform: 'twitter', parse: parseTwitterPath };

const HOSTS: ReadonlyMap<string, HostKind> = new Map([
  ['youtube.com', youtubeSite],
  ['www.youtube.com', youtubeSite],
  ['m.youtube.com', youtubeSite],
  ['music.youtube.com', youtubeMusic],
  ['youtube-nocookie.com', youtubeNoCookie],
  ['www.youtube-nocookie.com', youtubeNoCookie],
  ['youtu.be', youtubeShort],
  ['tiktok.com', tiktokSite],
  ['www.tiktok.com', tiktokSite],
  ['m.tiktok.com', tiktokSite],
  ['vm.tiktok.com', tiktokShort],
  ['vt.tiktok.com', tiktokShort],
  ['instagram.com', instagramSite],
  ['www.instagram.com', instagramSite],
  ['m.instagram.com', instagramSite],
  ...['twitter.com', 'x.com'].flatMap((domain) => ['', 'www.', 'mobile.', 'm.'].map((sub): [string, HostKind] => [sub + domain, twitterSite])),
]);

/**
 * `scheme://host[/path][?query][#fragment]`, nothing else: no user-info, no port, no whitespace,
 * no backslash. The host part is checked against HOSTS afterwards.
 */
const LINK = /^(https?):\/\/([A-Za-z0-9.-]+)(\/[^?#]*)?(?:\?([^#]*))?(?:#.*)?$/i;
const FORBIDDEN_CHARACTERS = /[\s\\\u0000-\u001f\u007f]/;

export function parseVideoLink(input: string): ParsedLink | LinkError {
  const videoLink = typeof input === 'string' ? input.trim() : '';
  if (!videoLink) return linkError('video_link is empty');
  if (videoLink.length > MAX_LINK_LENGTH) return linkError(`video_link is longer than ${MAX_LINK_LENGTH} characters`);
  // Anywhere in the link, the fragment and query included: the link is stored as given.
  if (hasUnstorableCharacters(videoLink)) return linkError('video_link contains NUL or an unpaired UTF-16 surrogate, which cannot be stored');
  const match = FORBIDDEN_CHARACTERS.test(videoLink) ? null : LINK.exec(videoLink);
  if (!match) return linkError('video_link is not an http(s) URL of a video');
  const host = match[2].toLowerCase();
  const kind = HOSTS.get(host);
  if (!kind) return linkError(`${host} is not a TikTok, YouTube, Instagram or X/Twitter video host`);

  const segments = pathSegments(match[3] ?? '/');
  const ids = segments && kind.parse(segments, new URLSearchParams(match[4] ?? ''));
  if (!ids) {
    return { error: `Not a recognised ${platformName(kind.platform)} video link. Accepted: ${ACCEPTED_LINK_SHAPES[kind.platform].replace(/^[^:]+: /, '')}` };
  }
  return ids.shortCode === undefined
    ? { platform: kind.platform, platformId: ids.platformId, videoLink }
    : { platform: kind.platform, platformId: ids.platformId, shortCode: ids.shortCode, videoLink };
}

function linkError(reason: string): LinkError {
  return { error: `${reason}. Accepted links: ${Object.values(ACCEPTED_LINK_SHAPES).join('; ')}` };
}

function platformName(platform: Platform): string {
  return ACCEPTED_LINK_SHAPES[platform].slice(0, ACCEPTED_LINK_SHAPES[platform].indexOf(':'));
}

/** "/a/b/" and "/a/b" -> ["a", "b"]; "/" -> []; an empty segment ("/a//b") -> null. */
function pathSegments(path: string): string[] | null {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (trimmed === '/') return [];
  const segments = trimmed.slice(1).split('/');
  return segments.includes('') ? null : segments;
}

function isExactly(segments: string[], ...expected: string[]): boolean {
  return segments.length === expected.length && segments.every((s, i) => s === expected[i]);
}

function youtubeId(candidate: string | null | undefined): Ids | null {
  return candidate != null && YOUTUBE_ID.test(candidate) ? { platformId: candidate } : null;
}

function youtubeWatch(query: URLSearchParams): Ids | null {
  return youtubeId(query.get('v'));
}

function parseYoutubePath(segments: string[], query: URLSearchParams): Ids | null {
  if (isExactly(segments, 'watch')) return youtubeWatch(query);
  if (segments.length === 2 && (segments[0] === 'embed' || segments[0] === 'shorts' || segments[0] === 'live')) {
    return youtubeId(segments[1]);
  }
  return null;
}

function tiktokShortCode(code: string): Ids | null {
  return TIKTOK_SHORT_CODE.test(code) ? { platformId: null, shortCode: code } : null;
}

function parseTiktokPath(segments: string[]): Ids | null {
  if (segments.length === 2 && segments[0] === 't') return tiktokShortCode(segments[1]);
  if (segments.length === 3 && TIKTOK_USER.test(segments[0]) && segments[1] === 'video' && isSnowflake(segments[2])) {
    return { platformId: segments[2] };
  }
  return null;
}

const INSTAGRAM_KINDS = new Set(['p', 'reel', 'reels', 'tv']);

function parseInstagramPath(segments: string[]): Ids | null {
  // /<kind>/<code> or /<user>/<kind>/<code>
  const withoutUser = segments.length === 3 && INSTAGRAM_USER.test(segments[0]) ? segments.slice(1) : segments;
  if (withoutUser.length !== 2) return null;
  const [kind, code] = withoutUser;
  return INSTAGRAM_KINDS.has(kind) && INSTAGRAM_CODE.test(code) ? { platformId: code } : null;
}

const TWITTER_MEDIA = new Set(['video', 'photo']);
const TWITTER_MEDIA_INDEX = /^[1-9][0-9]?$/;

function parseTwitterPath(segments: string[]): Ids | null {
  // /<user>/status/<id> or /i/web/status/<id>, either optionally followed by /video/<n> or /photo/<n>.
  const n = segments.length;
  const hasMedia = n >= 2 && TWITTER_MEDIA.has(segments[n - 2]) && TWITTER_MEDIA_INDEX.test(segments[n - 1]);
  const post = hasMedia ? segments.slice(0, -2) : segments;
  const byUser = post.length === 3 && TWITTER_USER.test(post[0]) && post[1] === 'status';
  const byWeb = post.length === 4 && post[0] === 'i' && post[1] === 'web' && post[2] === 'status';
  const id = post[post.length - 1];
  return (byUser || byWeb) && isSnowflake(id) ? { platformId: id } : null;
}
