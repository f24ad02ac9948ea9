// TikTok Research API video query: any public video, by id, up to 100 a query. Private and deleted
// videos are silently left out of the answer, so "not returned" is all we know (deleted: false).
// Ids exceed 2^53 and arrive as JSON numbers: they are read losslessly and kept as strings.
import type { Clock } from '../../clock.ts';
import type { Collector, FetchResult, VideoRef } from '../collector.ts';
import { Backoff } from './backoff.ts';
import { CALL_DEADLINE_MS, collectInBatches, type GroupAnswer, readOne } from './batch.ts';
import type { CallDeadline } from './call-deadline.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, type Failure, type HttpAnswer, isFailure, requestJson, retryAfterHeader, unavailable } from './http.ts';
import { array, count, definedOnly, identified, isRecord, Malformed, optionalString, record, string } from './json.ts';
import { groupByCreation, windowFor } from './tiktok-dates.ts';
import { TikTokClientToken } from './tiktok-token.ts';

export const TIKTOK_API_URL = 'https://open.tiktokapis.com';
const LABEL = 'TikTok';
const IDS_PER_QUERY = 100;
const VIDEO_ID = /^\d{1,20}$/;
const FIELDS = 'id,username,video_description,create_time,view_count,like_count,comment_count,share_count,favourites_count';
/** The index may spread a query's hits over pages (even empty ones); give up after this many. */
const MAX_PAGES = 5;
const RATE_LIMIT_PAUSE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface TikTokCollectorOptions {
  readonly clientKey: string;
  readonly clientSecret: string;
  readonly clock: Clock;
  readonly baseUrl?: string;
  readonly fetchTimeoutMs?: number;
  /** How long one collect() call may spend asking (CALL_DEADLINE_MS). */
  readonly callDeadlineMs?: number;
}

type Page = { readonly videos: unknown[]; readonly next?: { cursor: number; searchId: string } };

export class TikTokCollector implements Collector {
  readonly name = 'tiktok-research-api';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly backoff: Backoff;
  private readonly token: TikTokClientToken;

  constructor(private readonly options: TikTokCollectorOptions) {
    this.baseUrl = (options.baseUrl ?? TIKTOK_API_URL).replace(/\/+$/, '');
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.backoff = new Backoff(options.clock);
    this.token = new TikTokClientToken({ ...options, baseUrl: this.baseUrl, timeoutMs: this.timeoutMs });
  }

  collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
    return collectInBatches(
      LABEL,
      refs,
      {
        isValidId: (videoId) => VIDEO_ID.test(videoId),
        group: (distinct) => groupByCreation(distinct, IDS_PER_QUERY, this.options.clock.now()),
        fetchGroup: (group, deadline) => this.fetchGroup(group, deadline),
      },
      this.options.callDeadlineMs ?? CALL_DEADLINE_MS,
    );
  }

  private async fetchGroup(group: readonly VideoRef[], deadline: CallDeadline): Promise<GroupAnswer> {
    const ids = group.map((ref) => ref.platformId);
    const missing = new Set(ids);
    const answers = new Map<string, FetchResult>();
    const { startDate, endDate } = windowFor(group, this.options.clock.now());
    let next: Page['next'];
    for (let page = 0; page < MAX_PAGES && missing.size > 0 && (page === 0 || next); page++) {
      // Each page is a request of its own: the call's deadline is checked before it.
      const result = deadline.expired() ?? (await this.query({
        query: { and: [{ operation: 'IN', field_name: 'video_id', field_values: ids }] },
        start_date: startDate,
        end_date: endDate,
        max_count: IDS_PER_QUERY,
        ...(next && { cursor: next.cursor, search_id: next.searchId }),
      }, deadline));
      if ('status' in result) {
        // Pages already read stay good; only the videos still missing share the failure.
        for (const videoId of missing) answers.set(videoId, result);
        return answers;
      }
      for (const video of result.videos) {
        const read = identified(video);
        if (!read) continue;
        answers.set(read.id, this.readVideo(read.fields));
        missing.delete(read.id);
      }
      next = result.next;
    }
    for (const videoId of missing) {
      answers.set(videoId, { status: 'not_found', deleted: false, message: 'TikTok video not found or is private' });
    }
    return answers;
  }

  /** One page, with one retry on a fresh token if TikTok rejects ours before we expected. */
  private async query(body: object, deadline: CallDeadline): Promise<Page | Failure> {
    for (let attempt = 0; ; attempt++) {
      const blocked = this.backoff.blocked();
      if (blocked) return blocked;
      const token = await this.token.get();
      if (typeof token !== 'string') return token;
      const timeoutMs = deadline.timeout(this.timeoutMs);
      const answer = await requestJson(LABEL, `${this.baseUrl}/v2/research/video/query/?fields=${FIELDS}`, {
        method: 'POST',
        timeoutMs,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (isFailure(answer)) return deadline.failure(answer, timeoutMs, this.timeoutMs);
      const code = errorOf(answer.body).code;
      if (answer.status === 200 && code === 'ok') return readPage(answer.body);
      if (code === 'access_token_invalid' && attempt === 0) {
        this.token.invalidate(token);
        continue;
      }
      return this.refusal(answer);
    }
  }

  private refusal(answer: HttpAnswer): Failure {
    const { code, message } = errorOf(answer.body);
    const said = `${code ?? `HTTP ${answer.status}`}${message ? `: ${message}` : ''}`;
    if (answer.status === 429 || code === 'rate_limit_exceeded') {
      // The Research API's daily quota resets at midnight UTC; shorter limits give Retry-After or nothing.
      const now = this.options.clock.now();
      const until = /quota/i.test(said)
        ? new Date((Math.floor(now.getTime() / DAY_MS) + 1) * DAY_MS)
        : (retryAfterHeader(answer.headers, now) ?? new Date(now.getTime() + RATE_LIMIT_PAUSE_MS));
      return this.backoff.block(until, `TikTok rate limit: ${said}`);
    }
    if (answer.status === 401 || answer.status === 403 || code === 'access_token_invalid' || code === 'scope_not_authorized') {
      return unavailable(`TikTok refused the Research API credentials (TIKTOK_CLIENT_KEY / TIKTOK_CLIENT_SECRET): ${said}`);
    }
    if (answer.status === 200) return { status: 'invalid', message: `TikTok answered HTTP 200 without success: ${said}` };
    return unavailable(`TikTok answered HTTP ${answer.status}: ${said}`);
  }

  private readVideo(video: Record<string, unknown>): FetchResult {
    return readOne(LABEL, () => {
      const metrics = {
        views: count(video.view_count, 'view_count'),
        likes: count(video.like_count, 'like_count'),
        comments: count(video.comment_count, 'comment_count'),
        shares: count(video.share_count, 'share_count'),
        // Documented as favourites_count, spelled favorites_count in places: accept both.
        saves: count(video.favourites_count ?? video.favorites_count, 'favourites_count'),
      };
      return {
        status: 'ok',
        metrics: definedOnly(metrics),
        // TikTok videos have no title: the caption is the description.
        metadata: { title: '', creator: string(video.username, 'username'), description: optionalString(video.video_description, 'video_description') },
        provider: this.name,
      };
    });
  }
}

function errorOf(body: unknown): { code?: string; message?: string } {
  const error = isRecord(body) && isRecord(body.error) ? body.error : {};
  return {
    code: typeof error.code === 'string' ? error.code : undefined,
    message: typeof error.message === 'string' && error.message !== '' ? error.message : undefined,
  };
}

function readPage(body: unknown): Page {
  const data = record(record(body, 'the answer').data, 'data');
  const videos = data.videos === undefined ? [] : array(data.videos, 'data.videos');
  const hasMore = data.has_more === true;
  const cursor = data.cursor;
  const searchId = data.search_id;
  if (hasMore && (typeof cursor !== 'number' || typeof searchId !== 'string')) throw new Malformed('has_more without cursor and search_id');
  return hasMore ? { videos, next: { cursor: cursor as number, searchId: searchId as string } } : { videos };
}
