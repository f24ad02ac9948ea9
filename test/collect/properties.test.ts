// Property tests: whatever the four platforms answer (random bodies shaped like theirs with fields
// mutated or removed, random JSON, random bytes, random statuses and headers), a track answers
// 201 with a video GET shows in the spec's shape or one of the spec's platform errors; an hourly
// round ends, the other videos get their snapshots, the read models hold every event, and the
// balance drops by the snapshot price for each snapshot written, nothing else.
// The platforms are real HTTP servers (test/support/fakes/http-fake.ts) answering what each run
// scripts; the collectors are the real ones, made afresh each run so that one run's backoff (a
// random 429 with Retry-After) does not hold back the next.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { DAY_MS, HOUR_MS } from '../../src/clock.ts';
import type { Collector } from '../../src/collect/collector.ts';
import { InstagramCollector } from '../../src/collect/collectors/instagram.ts';
import { TikTokCollector } from '../../src/collect/collectors/tiktok.ts';
import { TwitterCollector } from '../../src/collect/collectors/twitter.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { chargeUsage, collectDue } from '../../src/collect/work.ts';
import { PLATFORMS, type Platform } from '../../src/domain/platform.ts';
import { projections } from '../../projections/index.ts';
import { client, linkOf, platformId, SNAPSHOT_MICROS } from '../api/helpers.ts';
import { tiktokIdAt } from '../support/fakes/tiktok-fake.ts';
import { startHttpFake, type HttpFake, type RecordedRequest } from '../support/fakes/http-fake.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { within } from '../support/wait.ts';

const MAX_COUNT = 2n ** 63n - 1n;
const LIMITS = { title: 1_000, creator: 1_000, description: 30_000 } as const;
const ERRORS: Record<number, string> = {
  404: 'Video not found or is private',
  500: 'Failed to start monitoring - invalid response from tracking API',
  502: 'Failed to fetch video data from platform',
};
const METRICS = ['views', 'likes', 'comments', 'shares', 'saves', 'retweets', 'replies'] as const;
type MetricName = (typeof METRICS)[number];

// ---- JSON with number literals written as they are ----------------------------------------

/** A JSON number literal sent as written (beyond 2^53, exponents, -0, 1E400). */
class Raw {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `Raw(${this.text})`;
  }
}

function serialize(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : serialize(v))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => `${JSON.stringify(k)}:${serialize(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function clone(value: unknown): unknown {
  if (value instanceof Raw || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(clone);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)]));
}

/** Every path into a value (not the value itself), objects' keys and arrays' indexes. */
function pathsOf(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (value instanceof Raw || value === null || typeof value !== 'object') return [];
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

type Mutation = { readonly pick: number; readonly remove: boolean; readonly value: unknown };

/** The value with each mutation applied at the path it picks among those left: a field removed or replaced. */
function mutate(value: unknown, mutations: readonly Mutation[], keep: (path: Array<string | number>) => boolean = () => true): unknown {
  const out = clone(value);
  for (const mutation of mutations) {
    const paths = pathsOf(out).filter(keep);
    if (paths.length === 0) break;
    const path = paths[mutation.pick % paths.length]!;
    const parent = path.slice(0, -1).reduce((at: any, key) => at[key], out) as any;
    const key = path.at(-1)!;
    if (mutation.remove && !Array.isArray(parent)) delete parent[key];
    else parent[key] = mutation.value;
  }
  return out;
}

// ---- arbitraries --------------------------------------------------------------------------

const HOSTILE = ['\u0000', '\ud800', '\udbff', '\udc00', '\udfff', '\u202e', '\u2066', '\u200f', '\u0007', '\u001b', '\u007f', '\ufeff', '\ud83d\ude00', '\n', '\r', '\t', '"', '\\', '<script>', '\u2028', '\uffff', '\u0085'];
const text = fc.oneof(
  { weight: 8, arbitrary: fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom(...HOSTILE)), { maxLength: 10 }).map((parts) => parts.join('')) },
  // Around the stored limits: a surrogate pair astride the cut.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(999, 1_000, 29_999, 30_000, 40_000), fc.constantFrom('\ud83d\ude00', '\u0000', '\ud800', 'x')).map(([n, tail]) => 'a'.repeat(n) + tail + 'b'.repeat(3)) },
);
/** A count as a platform might write it in JSON: every form here is a valid count. */
const goodCountNumber = fc.oneof(fc.nat().map((n) => n as unknown), fc.bigInt({ min: 0n, max: MAX_COUNT }).map((n) => new Raw(String(n)) as unknown));
const goodCountString = fc.oneof(fc.nat().map(String), fc.bigInt({ min: 0n, max: MAX_COUNT }).map(String));
/** Number literals and digit texts around what a count may be. */
const oddNumber = fc.oneof(
  fc.constantFrom('-1', '-0', '0.5', '1.0', '1e3', '1E400', '-1e400', '2e-5', '9223372036854775807', '9223372036854775808', '18446744073709551616', '99999999999999999999999999', '-99999999999999999999', '9007199254740993', '12345678901234567.0').map((t) => new Raw(t) as unknown),
  fc.double().filter(Number.isFinite).map((n) => n as unknown),
  fc.integer({ min: -1_000_000, max: -1 }).map((n) => n as unknown),
  fc.bigInt({ min: MAX_COUNT - 3n, max: MAX_COUNT + 3n }).map((n) => String(n) as unknown),
  fc.constantFrom('', ' 5', '+5', '5 ', '0x10', '1e3', '007', '-0', '１２', '9'.repeat(25), '0'.repeat(30) + '1', 'NaN', 'Infinity').map((s) => s as unknown),
);
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: oddNumber },
  { weight: 2, arbitrary: goodCountNumber },
  { weight: 2, arbitrary: text.map((t) => t as unknown) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [1], { id: 'x' }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);
const mutations = (max: number) => fc.array(fc.record({ pick: fc.nat(), remove: fc.boolean(), value: anyValue }), { maxLength: max });

interface VideoData {
  readonly views: unknown;
  readonly likes: unknown;
  readonly comments: unknown;
  readonly shares: unknown;
  readonly saves: unknown;
  readonly title: string;
  readonly creator: string;
  readonly description: string;
}
/** What a platform knows of a video: counts in the platform's own form (YouTube: digit strings), any text. */
const videoData = (platform: Platform): fc.Arbitrary<VideoData> => {
  const count = platform === 'youtube' ? goodCountString : goodCountNumber;
  return fc.record({ views: count, likes: count, comments: count, shares: count, saves: count, title: text, creator: text, description: text });
};

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The connection is cut after this many bytes of the body (a Content-Length promising them all). */
  readonly cutAt?: number;
  /** A value to serialize, or raw bytes. */
  readonly body: { json: unknown } | { bytes: Uint8Array };
}

const headerValue = fc.string({ unit: 'binary-ascii', maxLength: 30 }).map((s) => s.replace(/[^\x20-\x7e]/g, ''));
const headers = fc.record(
  {
    'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/html', 'application/octet-stream', 'text/plain; charset=latin1', ''),
    'retry-after': fc.oneof(fc.nat().map(String), fc.constantFrom('0', '99999999999999999999', 'Wed, 21 Oct 2015 07:28:00 GMT', 'Fri, 31 Dec 9999 23:59:59 GMT', 'soon', '-5', '1.5'), headerValue),
    'x-rate-limit-remaining': fc.constantFrom('0', '1', '-1', 'x', ''),
    'x-rate-limit-reset': fc.oneof(fc.nat().map(String), fc.constantFrom('99999999999999999999', '1e3', '-1', '')),
    'x-business-use-case-usage': fc.oneof(headerValue, fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v).replace(/[^\x20-\x7e]/g, ''))),
    'x-app-usage': headerValue,
    'content-encoding': fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'gzip, br', 'x-unknown'),
  },
  { requiredKeys: [] },
);
const status = fc.oneof(
  { weight: 6, arbitrary: fc.constant(200) },
  { weight: 3, arbitrary: fc.constantFrom(201, 204, 301, 304, 400, 401, 403, 404, 410, 418, 429, 500, 502, 503) },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 599 }) },
);

// ---- the platforms' answers -----------------------------------------------------------------

const OWNER = 'owner.acct';
let tiktokSerial = 0;

/** A well-formed success answer of `platform` for `videos` (by platform id), in the shape research/platform-apis.md gives. */
function successBody(platform: Platform, videos: ReadonlyArray<readonly [string, VideoData]>): unknown {
  switch (platform) {
    case 'youtube':
      return {
        kind: 'youtube#videoListResponse',
        items: videos.map(([id, v]) => ({
          kind: 'youtube#video',
          id,
          snippet: { publishedAt: '2026-01-01T00:00:00Z', channelId: 'UC1', title: v.title, description: v.description, channelTitle: v.creator },
          statistics: { viewCount: v.views, likeCount: v.likes, commentCount: v.comments, favoriteCount: '0' },
        })),
        pageInfo: { totalResults: videos.length, resultsPerPage: videos.length },
      };
    case 'tiktok':
      return {
        data: {
          videos: videos.map(([id, v]) => ({
            id: new Raw(id),
            username: v.creator,
            video_description: v.description,
            create_time: 1_700_000_000,
            view_count: v.views,
            like_count: v.likes,
            comment_count: v.comments,
            share_count: v.shares,
            favourites_count: v.saves,
          })),
          cursor: videos.length,
          has_more: false,
          search_id: 'search-1',
        },
        error: { code: 'ok', message: '', log_id: 'log-1' },
      };
    case 'instagram':
      return {
        business_discovery: {
          username: OWNER,
          media: {
            data: videos.map(([id, v], i) => ({
              id: `1790000000${i}`,
              shortcode: id,
              permalink: `https://www.instagram.com/p/${id}/`,
              caption: v.description,
              like_count: v.likes,
              comments_count: v.comments,
              timestamp: '2026-01-01T00:00:00+0000',
              media_type: 'VIDEO',
            })),
            paging: { cursors: { before: 'QQ', after: 'Qg' } },
          },
          id: 'ig-owner',
        },
        id: '17841400000000001',
      };
    case 'twitter':
      return {
        data: videos.map(([id, v], i) => ({
          id,
          text: v.description,
          author_id: `9${i}`,
          edit_history_tweet_ids: [id],
          public_metrics: { retweet_count: v.shares, reply_count: v.comments, like_count: v.likes, quote_count: 0, bookmark_count: 0, impression_count: v.views },
        })),
        includes: { users: videos.map(([, v], i) => ({ id: `9${i}`, username: v.creator, name: 'Name' })) },
      };
  }
}

/** A refusal in the platform's own envelope (rate limits, quota, credentials, unknown accounts). */
const errorBody = (platform: Platform): fc.Arbitrary<unknown> => {
  switch (platform) {
    case 'youtube':
      return fc.record({ error: fc.record({ code: fc.constantFrom(400, 403, 429), message: text, errors: fc.array(fc.record({ reason: fc.constantFrom('quotaExceeded', 'dailyLimitExceeded', 'rateLimitExceeded', 'keyInvalid', 'forbidden', 'backendError') }), { maxLength: 2 }) }) });
    case 'tiktok':
      return fc.record({ error: fc.record({ code: fc.constantFrom('ok', 'rate_limit_exceeded', 'access_token_invalid', 'scope_not_authorized', 'invalid_params', 'internal_error'), message: fc.oneof(text, fc.constant('daily quota limit exceeded')), log_id: fc.constant('l') }) });
    case 'instagram':
      return fc.record({ error: fc.record({ message: text, type: fc.constant('OAuthException'), code: fc.constantFrom(1, 2, 4, 10, 17, 32, 100, 110, 190, 200, 613), fbtrace_id: fc.constant('t') }) });
    case 'twitter':
      return fc.record({ title: text, detail: text, type: fc.constantFrom('about:blank', 'https://api.twitter.com/2/problems/resource-not-found'), status: fc.nat(600) });
  }
};

/** How a platform answers one call, made into an Answer for the videos asked by `answerOf`. */
type AnswerPlan =
  | { readonly kind: 'success' | 'refusal'; readonly status: number; readonly headers: Record<string, string>; readonly refusal: unknown; readonly mutations: readonly Mutation[]; readonly cutAt?: number | null }
  | { readonly kind: 'json'; readonly status: number; readonly headers: Record<string, string>; readonly json: unknown }
  | { readonly kind: 'bytes'; readonly status: number; readonly headers: Record<string, string>; readonly bytes: Uint8Array };

/** Any answer a platform might give to one call. */
const answerPlan = (platform: Platform): fc.Arbitrary<AnswerPlan> =>
  fc.oneof(
    // Its success answer, with some fields replaced or removed: the most telling case.
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('success' as const), status: fc.constant(200), headers: fc.constant({}), refusal: fc.constant(null), mutations: mutations(3) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('success' as const), status, headers, refusal: fc.constant(null), mutations: mutations(3), cutAt: fc.option(fc.nat(400), { freq: 3 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('refusal' as const), status, headers, refusal: errorBody(platform), mutations: mutations(2) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('json' as const), status, headers, json: fc.jsonValue({ maxDepth: 3 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('bytes' as const), status, headers, bytes: fc.uint8Array({ maxLength: 200 }) }) },
  );

function answerOf(platform: Platform, plan: AnswerPlan, videos: ReadonlyArray<readonly [string, VideoData]>): Answer {
  switch (plan.kind) {
    case 'success':
      return { status: plan.status, headers: plan.headers, body: { json: mutate(successBody(platform, videos), plan.mutations) }, ...(plan.cutAt != null && { cutAt: plan.cutAt }) };
    case 'refusal':
      return { status: plan.status, headers: plan.headers, body: { json: mutate(plan.refusal, plan.mutations) } };
    case 'json':
      return { status: plan.status, headers: plan.headers, body: { json: plan.json } };
    case 'bytes':
      return { status: plan.status, headers: plan.headers, body: { bytes: plan.bytes } };
  }
}

/** TikTok's token endpoint: nearly always a token, now and then anything. */
const tokenAnswer: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 5, arbitrary: fc.constant<Answer>({ status: 200, headers: {}, body: { json: { access_token: 'clt.token', expires_in: 7200, token_type: 'Bearer' } } }) },
  { weight: 1, arbitrary: fc.record({ status, headers, body: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant({ error: 'invalid_client', error_description: 'bad' })).map((json) => ({ json })) }) },
);

function send(response: ServerResponse, answer: Answer): void {
  const body = 'json' in answer.body ? Buffer.from(serialize(answer.body.json), 'utf8') : Buffer.from(answer.body.bytes);
  if (answer.cutAt === undefined) {
    response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
    return void response.end(body);
  }
  response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers, 'content-length': String(body.length + 1) });
  response.write(body.subarray(0, Math.min(answer.cutAt, body.length)), () => response.destroy());
}

function describeAnswer(answer: Answer): string {
  const body = 'json' in answer.body ? serialize(answer.body.json) : `bytes ${Buffer.from(answer.body.bytes).toString('hex')}`;
  return `HTTP ${answer.status} ${JSON.stringify(answer.headers)}${answer.cutAt === undefined ? '' : ` cut after ${answer.cutAt} bytes`} ${body.length > 3000 ? `${body.slice(0, 3000)}… (${body.length})` : body}`;
}

// ---- what an answer says of one video (the oracle) -------------------------------------------

const BAD = Symbol('not a count or text');
type Verdict = string | undefined | typeof BAD;

/** A count as the spec holds it (a non-negative integer up to 2^63 − 1, as a decimal string), undefined when left out, BAD otherwise. */
function countVerdict(value: unknown): Verdict {
  value = asRead(value);
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? String(Object.is(value, -0) ? 0 : value) : BAD;
  if (typeof value === 'string') return /^\d+$/.test(value) && BigInt(value) <= MAX_COUNT ? String(BigInt(value)) : BAD;
  return BAD;
}

/**
 * A number literal as the collectors read it (parseJsonLossless): an integer beyond 2^53 as its
 * exact decimal text, anything else as JSON.parse reads it.
 */
function asRead(value: unknown): unknown {
  if (!(value instanceof Raw) && typeof value !== 'number') return value;
  const text = value instanceof Raw ? value.text : JSON.stringify(value);
  return /^-?\d+$/.test(text) && !Number.isSafeInteger(Number(text)) ? text : Number(text);
}

/** Text as stored: without NUL and lone surrogates, cut to `limit` code units without splitting a pair. */
function cleaned(value: string, limit: number): string {
  let out = '';
  for (const point of value) {
    const code = point.codePointAt(0)!;
    if (code === 0 || (code >= 0xd800 && code <= 0xdfff)) continue;
    out += point;
  }
  if (out.length <= limit) return out;
  const cut = out.slice(0, limit);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

function textVerdict(value: unknown, limit: number, required = false): Verdict {
  value = asRead(value);
  if (typeof value === 'string') return cleaned(value, limit);
  return (value === undefined || value === null) && !required ? '' : BAD;
}

const rec = (v: unknown): Record<string, any> | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw) ? (v as Record<string, any>) : undefined);
/** An id as read from JSON: a non-empty string, or a non-negative safe integer (literals beyond 2^53 are read as their text). */
function idText(v: unknown): string | undefined {
  v = asRead(v);
  if (typeof v === 'string') return v === '' ? undefined : v;
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? String(v) : undefined;
}

interface Expected {
  readonly metrics: Partial<Record<MetricName, Verdict>>;
  readonly metadata: { title: Verdict; creator: Verdict; description: Verdict };
}

/**
 * What the answer's entry for `id` says: its counts and texts where the platform's documentation
 * puts them, or undefined when the answer holds no entry for it there.
 */
function expectedOf(platform: Platform, body: unknown, id: string): Expected | undefined {
  const root = rec(body);
  const list = (v: unknown) => (Array.isArray(v) ? v : []);
  switch (platform) {
    case 'youtube': {
      const item = list(root?.items).map(rec).filter((i) => i && idText(i.id) === id).at(-1);
      if (!item) return undefined;
      const s = rec(item.statistics) ?? (item.statistics === undefined ? {} : undefined);
      const snippet = rec(item.snippet);
      return {
        metrics: s ? { views: countVerdict(s.viewCount), likes: countVerdict(s.likeCount), comments: countVerdict(s.commentCount) } : { views: BAD },
        metadata: { title: snippet ? textVerdict(snippet.title, LIMITS.title, true) : BAD, creator: snippet ? textVerdict(snippet.channelTitle, LIMITS.creator) : BAD, description: snippet ? textVerdict(snippet.description, LIMITS.description) : BAD },
      };
    }
    case 'tiktok': {
      const item = list(rec(root?.data)?.videos).map(rec).filter((i) => i && idText(i.id) === id).at(-1);
      if (!item) return undefined;
      return {
        metrics: {
          views: countVerdict(item.view_count),
          likes: countVerdict(item.like_count),
          comments: countVerdict(item.comment_count),
          shares: countVerdict(item.share_count),
          saves: countVerdict(item.favourites_count ?? item.favorites_count),
        },
        metadata: { title: '', creator: textVerdict(item.username, LIMITS.creator, true), description: textVerdict(item.video_description, LIMITS.description) },
      };
    }
    case 'instagram': {
      const media = rec(rec(rec(root?.business_discovery)?.media));
      const item = list(media?.data).map(rec).find((i) => i && (typeof i.shortcode === 'string' ? i.shortcode === id : typeof i.permalink === 'string' && i.permalink.includes(`/p/${id}/`)));
      if (!item) return undefined;
      return {
        metrics: { likes: countVerdict(item.like_count), comments: countVerdict(item.comments_count) },
        metadata: { title: '', creator: OWNER, description: textVerdict(item.caption, LIMITS.description) },
      };
    }
    case 'twitter': {
      const item = list(root?.data).map(rec).filter((i) => i && idText(i.id) === id).at(-1);
      if (!item) return undefined;
      const m = rec(item.public_metrics);
      const author = item.author_id === undefined ? undefined : idText(item.author_id);
      const user = author === undefined ? undefined : list(rec(root?.includes)?.users).map(rec).filter((u) => u && idText(u.id) === author).at(-1);
      const creator = item.author_id !== undefined && author === undefined ? BAD : user ? textVerdict(user.username, LIMITS.creator, true) : '';
      const replies = m ? countVerdict(m.reply_count) : BAD;
      const retweets = m ? countVerdict(m.retweet_count) : BAD;
      return {
        metrics: { views: m ? countVerdict(m.impression_count) : BAD, likes: m ? countVerdict(m.like_count) : BAD, comments: replies, shares: retweets, retweets, replies },
        metadata: { title: '', creator, description: textVerdict(item.text, LIMITS.description, true) },
      };
    }
  }
}

const storable = (e: Expected) => Object.values(e.metrics).every((v) => v !== BAD);

/** The snapshot fields GET shows for what the answer says (metrics left out are absent). */
function shownMetrics(e: Expected): Record<string, string> {
  return Object.fromEntries(Object.entries(e.metrics).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
}

// ---- the service, the platforms and the collectors --------------------------------------------

const COLLECTOR_NAMES: Record<Platform, string> = { youtube: 'youtube-data-api-v3', tiktok: 'tiktok-research-api', instagram: 'instagram-graph-api', twitter: 'x-api-v2' };

/** What each platform's server answers, set by each run. */
type Script = (request: RecordedRequest, response: ServerResponse) => void;

describe('whatever the platforms answer', () => {
  const servers = {} as Record<Platform, HttpFake>;
  const scripts = {} as Record<Platform, Script>;
  const current = {} as Record<Platform, Collector>;
  let service: TestService;

  /** New collectors against the scripted servers: no backoff or token carried over from an earlier run. */
  function freshCollectors(): void {
    const clock = service.clock;
    current.youtube = new YouTubeCollector({ apiKey: 'key', baseUrl: `${servers.youtube.url}/youtube/v3`, clock, fetchTimeoutMs: 5_000 });
    current.tiktok = new TikTokCollector({ clientKey: 'k', clientSecret: 's', baseUrl: servers.tiktok.url, clock, fetchTimeoutMs: 5_000 });
    current.instagram = new InstagramCollector({ accessToken: 't', userId: '17841400000000001', baseUrl: `${servers.instagram.url}/v25.0`, clock, fetchTimeoutMs: 5_000, maxPages: 3 });
    current.twitter = new TwitterCollector({ bearerToken: 'b', baseUrl: servers.twitter.url, clock, fetchTimeoutMs: 5_000 });
  }

  before(async () => {
    for (const platform of PLATFORMS) {
      scripts[platform] = (_request, response) => send(response, { status: 503, headers: {}, body: { json: {} } });
      servers[platform] = await startHttpFake((request, response) => scripts[platform](request, response));
    }
    const live = Object.fromEntries(PLATFORMS.map((p) => [p, { name: COLLECTOR_NAMES[p], collect: (refs) => current[p].collect(refs) } satisfies Collector]));
    service = await startTestService({ live, fallbackToSimulator: false });
    freshCollectors();
  });
  after(async () => {
    await service?.close();
    for (const platform of PLATFORMS) await servers[platform]?.close();
  });

  const linkFor = (platform: Platform, id: string) => (platform === 'instagram' ? `https://www.instagram.com/${OWNER}/p/${id}/` : linkOf(platform, id));

  /** The ids a request asks for (Instagram's business discovery asks for none: its owner's posts). */
  function idsAsked(platform: Platform, request: RecordedRequest): string[] | undefined {
    if (platform === 'youtube') return (request.query.get('id') ?? '').split(',').filter(Boolean);
    if (platform === 'twitter') return (request.query.get('ids') ?? '').split(',').filter(Boolean);
    if (platform === 'tiktok') return JSON.parse(request.body).query.and[0].field_values;
    return undefined;
  }

  /** Answers the token endpoint with `token`, every other request with `answer(request)`. */
  function script(platform: Platform, answer: (request: RecordedRequest) => Answer, token?: Answer): void {
    scripts[platform] = (request, response) => {
      if (platform === 'tiktok' && request.path === '/v2/oauth/token/') return send(response, token ?? { status: 200, headers: {}, body: { json: { access_token: 'clt.token', expires_in: 7200 } } });
      send(response, answer(request));
    };
  }

  async function balanceMicros(apiKey: string): Promise<number> {
    const usage = await client(service, apiKey).usage();
    assert.equal(usage.statusCode, 200, usage.body);
    return Math.round(usage.json().balance_usd * 1_000_000);
  }

  /** The read models hold every event of the log: projected to its head, nothing parked. */
  async function assertProjectedToHead(): Promise<void> {
    await service.settle();
    const { rows: parked } = await service.db.pool.query(`SELECT projection, type, error FROM rm.parked_events`);
    assert.deepEqual(parked, [], 'no event is parked');
    const { rows } = await service.db.pool.query(
      `SELECT c.projection FROM rm.checkpoints c, (SELECT transaction_id, position FROM es.events ORDER BY transaction_id DESC, position DESC LIMIT 1) h
        WHERE c.projection = ANY($1) AND (c.commit_position IS NULL OR (c.commit_position, c.prepare_position) < (h.transaction_id::text::numeric, h.position::numeric))`,
      [projections.map((p) => p.name)],
    );
    const { rows: known } = await service.db.pool.query(`SELECT count(*)::int AS n FROM rm.checkpoints WHERE projection = ANY($1)`, [projections.map((p) => p.name)]);
    assert.equal(known[0].n, projections.length, 'every projection has its checkpoint');
    assert.deepEqual(rows, [], 'every checkpoint is at the log\'s head');
  }

  /** GET's snapshots and metadata are exactly what the video's events in the log say. */
  async function assertReadModelsHoldLog(apiKey: string, videoId: string): Promise<Record<string, any>> {
    const response = await client(service, apiKey).video(videoId);
    assert.equal(response.statusCode, 200, response.body);
    const shown = response.json();
    const events = (await service.store.readStream(`video-${videoId}`)).map((e) => ({ type: e.type, data: e.data as Record<string, any> }));
    const snapshots = events.filter((e) => e.type === 'SnapshotRecorded').map((e) => e.data);
    assert.deepEqual(
      shown.snapshots.map((s: Record<string, unknown>) => ({ slot: Number(String(s.snapshot_id).slice(-3)), provider: s.provider, metrics: Object.fromEntries(METRICS.filter((m) => s[m] !== undefined).map((m) => [m, s[m]])) })),
      snapshots.map((s) => ({ slot: s.slot, provider: s.provider, metrics: Object.fromEntries(Object.entries(s.metrics).filter(([, v]) => v != null)) })),
      'GET shows every snapshot of the log, as recorded',
    );
    const metadata = events.filter((e) => e.data.metadata !== undefined).at(-1)?.data.metadata;
    assert.deepEqual(shown.current_metadata, metadata, 'current_metadata is the latest the log holds');
    return shown;
  }

  function assertSpecShape(video: Record<string, any>): void {
    for (const s of video.snapshots) {
      for (const m of METRICS) {
        if (s[m] === undefined) continue;
        assert.match(s[m], /^(0|[1-9]\d*)$/, `${m} is a decimal string`);
        assert.ok(BigInt(s[m]) <= MAX_COUNT, `${m} fits the read models`);
      }
    }
    for (const key of ['title', 'creator', 'description'] as const) {
      assert.equal(typeof video.current_metadata[key], 'string');
      assert.ok(!/\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(video.current_metadata[key]), `${key} holds nothing storage refuses`);
    }
  }

  it('a track answers 201 with the video as the platform sent it, or the spec\'s 404, 500 or 502; one snapshot charged, or none', async () => {
    const org = await service.organization({ usd: '10000' });
    const api = client(service, org.liveKey);
    const input = fc.constantFrom(...PLATFORMS).chain((platform) => fc.record({ platform: fc.constant(platform), video: videoData(platform), plan: answerPlan(platform), token: tokenAnswer }));
    await fc.assert(
      fc.asyncProperty(input, async ({ platform, video, plan, token }) => {
        // A fresh id each run, shrinking runs included: a video left tracked by a failed run would answer 409.
        const id = platformId(platform);
        const answer = answerOf(platform, plan, [[id, video]]);
        freshCollectors();
        script(platform, () => answer, token);
        // Whatever an earlier (failed) run left uncharged is charged before this run's figure is taken.
        await chargeUsage(service.work);
        const balanceBefore = await balanceMicros(org.liveKey);
        const response = await api.track(linkFor(platform, id), 1);
        const body = response.json();
        try {
          assert.ok([201, 404, 500, 502].includes(response.statusCode), `track answered ${response.statusCode}: ${response.body}`);
          const expected = 'json' in answer.body && answer.status === 200 ? expectedOf(platform, answer.body.json, id) : undefined;
          if (response.statusCode !== 201) {
            assert.equal(body.error, ERRORS[response.statusCode], response.body);
            if (response.statusCode === 502) {
              assert.deepEqual(Object.keys(body).sort(), ['details', 'error']);
              assert.equal(body.details[0].field, 'video_link');
              assert.equal(cleaned(body.details[0].message, 2_000), body.details[0].message, 'the platform\'s word is quoted as storable text');
            }
            else assert.deepEqual(Object.keys(body), ['error']);
          } else {
            const video = await assertReadModelsHoldLog(org.liveKey, body.id);
            assertSpecShape(video);
            assert.equal(video.snapshots.length, 1);
            // What was stored is what the answer said of the video where the platform puts it.
            assert.ok(expected, 'a 201 comes from a 200 answer holding the video');
            assert.ok(storable(expected), 'a 201 holds only counts');
            const { id: _id, snapshot_id: _s, snapshot_time: _t, provider, ...metrics } = video.snapshots[0];
            assert.deepEqual(metrics, shownMetrics(expected));
            assert.equal(provider, COLLECTOR_NAMES[platform]);
            assert.deepEqual(video.current_metadata, expected.metadata);
            assert.equal((await api.stop(body.id)).statusCode, 200);
          }
          await chargeUsage(service.work);
          await assertProjectedToHead();
          assert.equal(await balanceMicros(org.liveKey), balanceBefore - (response.statusCode === 201 ? SNAPSHOT_MICROS : 0), 'the balance drops by one snapshot for a 201, by nothing otherwise');
        } finally {
          // A failed run's video is not collected by the next property's rounds.
          if (response.statusCode === 201) await api.stop(body.id);
        }
      }),
      { seed: 42, numRuns: 300, reporter: readable(describePlan) },
    );
  });

  it('an hourly round over many videos ends whatever each platform answers: the other videos get their snapshots, the read models hold the log, billing holds', async () => {
    const PER_PLATFORM = 3;
    /** Per platform: its videos' data this hour, which of them answer mutated, and now and then a whole answer in place of its success. */
    const platformRound = (platform: Platform) =>
      fc.record({
        videos: fc.array(fc.record({ data: videoData(platform), victim: fc.nat(3).map((n) => n === 0), mutations: mutations(3) }), { minLength: PER_PLATFORM, maxLength: PER_PLATFORM }),
        odd: fc.array(anyValue, { maxLength: 2 }),
        whole: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.record({ status, headers, body: fc.oneof(fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })), fc.uint8Array({ maxLength: 100 }).map((bytes) => ({ bytes }))) }) }),
      });
    const input = fc.record(Object.fromEntries(PLATFORMS.map((p) => [p, platformRound(p)])) as Record<Platform, ReturnType<typeof platformRound>>);
    const trackData = (i: number): VideoData => ({ views: '1', likes: '1', comments: '1', shares: '1', saves: '1', title: `T${i}`, creator: 'c', description: 'd' });

    await fc.assert(
      fc.asyncProperty(input, async (round) => {
        freshCollectors();
        const org = await service.organization({ usd: '1000' });
        const api = client(service, org.liveKey);
        const balanceBefore = await balanceMicros(org.liveKey);
        // Tracked with plain answers.
        const videos: Array<{ platform: Platform; id: string; videoId: string; index: number }> = [];
        try {
          for (const platform of PLATFORMS) {
            // TikTok ids carry their creation time: videos created 40 days apart are asked in queries of their own.
            const ids = Array.from({ length: PER_PLATFORM }, (_, k) => (platform === 'tiktok' ? tiktokIdAt(new Date(service.clock.now().getTime() - (k * 40 + 1) * DAY_MS), ++tiktokSerial) : platformId(platform)));
            const plain = (asked: readonly string[]) => successBody(platform, asked.map((id, i) => [id, trackData(i)]));
            script(platform, (request) => ({ status: 200, headers: {}, body: { json: plain(idsAsked(platform, request) ?? ids) } }));
            for (const [index, id] of ids.entries()) {
              const response = await api.track(linkFor(platform, id), 1);
              assert.equal(response.statusCode, 201, response.body);
              videos.push({ platform, id, videoId: response.json().id, index });
            }
          }
          // The hour's answers.
          const sent = new Map<Platform, unknown[]>();
          for (const platform of PLATFORMS) {
            const plan = round[platform];
            const mine = videos.filter((v) => v.platform === platform);
            const keep = (path: Array<string | number>) => !['id', 'shortcode', 'permalink'].includes(String(path[0]));
            const answer = (request: RecordedRequest): Answer => {
              if (plan.whole) return plan.whole;
              const asked = idsAsked(platform, request) ?? mine.map((v) => v.id);
              const body = successBody(platform, asked.map((id) => [id, plan.videos[mine.find((v) => v.id === id)?.index ?? 0]!.data])) as any;
              const list: any[] = platform === 'youtube' ? body.items : platform === 'tiktok' ? body.data.videos : platform === 'instagram' ? body.business_discovery.media.data : body.data;
              asked.forEach((id, i) => {
                const plannedVideo = plan.videos[mine.find((v) => v.id === id)?.index ?? 0]!;
                if (plannedVideo.victim) list[i] = mutate(list[i], plannedVideo.mutations, keep);
              });
              list.push(...plan.odd);
              sent.set(platform, [...(sent.get(platform) ?? []), body]);
              return { status: 200, headers: {}, body: { json: body } };
            };
            script(platform, answer);
          }
          service.clock.advance(HOUR_MS);
          await within('the collection round', collectDue(service.work), 60_000);
          await assertProjectedToHead();

          let written = 0;
          for (const video of videos) {
            const shown = await assertReadModelsHoldLog(org.liveKey, video.videoId);
            assertSpecShape(shown);
            written += shown.snapshots.length;
            const plan = round[video.platform];
            const hourly = shown.snapshots.filter((s: Record<string, string>) => s.snapshot_id.endsWith('-001'));
            if (plan.whole) continue;
            const bodies = sent.get(video.platform) ?? [];
            assert.ok(bodies.length > 0, `${video.platform} was asked`);
            // The answer to the call that asked for it (a platform's videos may take several calls).
            const expected = bodies.map((body) => expectedOf(video.platform, body, video.id)).filter((e) => e !== undefined).at(-1);
            assert.ok(expected, `${video.platform} video ${video.index} is in an answer sent: ${bodies.map((body) => serialize(body).slice(0, 1000)).join('\n')}`);
            if (!plan.videos[video.index]!.victim) {
              assert.equal(hourly.length, 1, `${video.platform} video ${video.index} (answered as sent) has its hour-1 snapshot`);
            }
            if (hourly.length === 1) {
              assert.ok(storable(expected), `${video.platform} video ${video.index}: a snapshot holds only counts`);
              const { id: _id, snapshot_id: _s, snapshot_time: _t, provider: _p, ...metrics } = hourly[0];
              assert.deepEqual(metrics, shownMetrics(expected), `${video.platform} video ${video.index}: the counts sent`);
              assert.deepEqual(shown.current_metadata, expected.metadata, `${video.platform} video ${video.index}: the texts sent, cleaned`);
            } else {
              assert.ok(!storable(expected) || Object.values(expected.metadata).includes(BAD), `${video.platform} video ${video.index}: an answer with counts and texts gets its snapshot`);
            }
          }
          // The hour over, the same answers again: every video's hour-1 slot is now a snapshot or a failed hour.
          service.clock.advance(HOUR_MS);
          await within('the round at the hour\'s end', collectDue(service.work), 60_000);
          await assertProjectedToHead();
          written = 0;
          for (const video of videos) {
            written += (await assertReadModelsHoldLog(org.liveKey, video.videoId)).snapshots.length;
            const slot1 = (await service.store.readStream(`video-${video.videoId}`)).filter((e) => ['SnapshotRecorded', 'CollectionFailed'].includes(e.type) && (e.data as { slot: number }).slot === 1);
            assert.deepEqual(slot1.length, 1, `${video.platform} video ${video.index}: hour 1 is recorded once, as a snapshot or a failure, once it is over: ${slot1.map((e) => e.type)}`);
            const message = (slot1[0]!.data as { message?: unknown }).message;
            if (slot1[0]!.type === 'CollectionFailed') assert.ok(typeof message === 'string' && cleaned(message, Infinity) === message, `a failure's message is storable text: ${JSON.stringify(message)}`);
          }
          await within('charging', chargeUsage(service.work), 30_000);
          await assertProjectedToHead();
          assert.equal(await balanceMicros(org.liveKey), balanceBefore - written * SNAPSHOT_MICROS, `${written} snapshots written: the balance drops by as many snapshot prices`);
        } finally {
          // Not collected again by the next run's round.
          for (const video of videos) await api.stop(video.videoId);
        }
      }),
      { seed: 42, numRuns: 25, reporter: readable((round) => JSON.stringify(round, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'bigint' ? String(v) : v)).slice(0, 8000)) },
    );
  });
});

function describePlan(input: { platform: Platform; video: VideoData; plan: AnswerPlan; token: Answer }): string {
  const answer = answerOf(input.platform, input.plan, [['<id>', input.video]]);
  return `${input.platform}: ${describeAnswer(answer)}${input.platform === 'tiktok' ? `\n token: ${describeAnswer(input.token)}` : ''}`;
}

/** A reporter whose failure message shows the shrunk counterexample as the platform sent it. */
function readable<T>(show: (value: T) => string) {
  return (details: fc.RunDetails<[T]>) => {
    if (!details.failed) return;
    const shown = details.counterexample ? show(details.counterexample[0]) : '(none)';
    throw new Error(`property failed after ${details.numRuns} runs (seed ${details.seed}, path ${details.counterexamplePath})\ncounterexample: ${shown}\n${details.errorInstance instanceof Error ? details.errorInstance.stack : String(details.errorInstance)}`);
  };
}
