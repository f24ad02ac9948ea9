// YouTube Data API v3 `videos.list`: 50 ids a call, 1 quota unit a call whatever the id count.
// An id missing from `items` is absent, private or deleted; an API key cannot tell which.
import type { Clock } from '../../clock.ts';
import type { Collector, FetchResult, VideoRef } from '../collector.ts';
import { Backoff } from './backoff.ts';
import { chunksOf, collectInBatches, type GroupAnswer, readOne } from './batch.ts';
import type { CallDeadline } from './call-deadline.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, type HttpAnswer, isFailure, requestJson, unavailable } from './http.ts';
import { array, count, definedOnly, identified, isRecord, optionalString, record, string } from './json.ts';
import { YOUTUBE_DAILY_QUOTA_UNITS, YouTubeQuota } from './youtube-quota.ts';

export const YOUTUBE_API_URL = 'https://www.googleapis.com/youtube/v3';
const LABEL = 'YouTube';
const IDS_PER_CALL = 50;
const VIDEO_ID = /^[A-Za-z0-9_-]{11}$/;
/** Per-user rate limiting (not the daily quota) gives no reset time: wait a minute. */
const RATE_LIMIT_PAUSE_MS = 60_000;

export interface YouTubeCollectorOptions {
  readonly apiKey: string;
  readonly clock: Clock;
  readonly baseUrl?: string;
  readonly fetchTimeoutMs?: number;
  readonly dailyQuotaUnits?: number;
}

export class YouTubeCollector implements Collector {
  readonly name = 'youtube-data-api-v3';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly backoff: Backoff;
  private readonly quota: YouTubeQuota;

  constructor(private readonly options: YouTubeCollectorOptions) {
    this.baseUrl = (options.baseUrl ?? YOUTUBE_API_URL).replace(/\/+$/, '');
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.backoff = new Backoff(options.clock);
    this.quota = new YouTubeQuota(options.clock, options.dailyQuotaUnits ?? YOUTUBE_DAILY_QUOTA_UNITS);
  }

  /** Quota units left today, as this process counts them. */
  quotaRemaining(): number {
    return this.quota.remaining();
  }

  collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
    return collectInBatches(LABEL, refs, {
      isValidId: (id) => VIDEO_ID.test(id),
      group: chunksOf(IDS_PER_CALL),
      fetchGroup: (group, deadline) => this.fetchGroup(group.map((ref) => ref.platformId), deadline),
    });
  }

  private async fetchGroup(ids: readonly string[], deadline: CallDeadline): Promise<GroupAnswer> {
    const blocked = this.backoff.blocked();
    if (blocked) return blocked;
    if (!this.quota.trySpend(1)) {
      return this.backoff.block(this.quota.resetsAt(), 'YouTube daily API quota is spent');
    }
    const url = new URL(`${this.baseUrl}/videos`);
    url.searchParams.set('part', 'snippet,statistics');
    url.searchParams.set('id', ids.join(','));
    url.searchParams.set('key', this.options.apiKey);
    const timeoutMs = deadline.timeout(this.timeoutMs);
    const answer = await requestJson(LABEL, url.href, { timeoutMs });
    if (isFailure(answer)) return deadline.failure(answer, timeoutMs, this.timeoutMs);
    if (answer.status !== 200) return this.refusal(answer);
    return this.readVideoList(answer.body, ids);
  }

  private readVideoList(body: unknown, ids: readonly string[]): Map<string, FetchResult> {
    const items = array(record(body, 'the answer').items, 'items');
    const answers = new Map<string, FetchResult>();
    for (const item of items) {
      const read = identified(item);
      if (read) answers.set(read.id, this.readItem(read.fields));
    }
    for (const id of ids) {
      if (!answers.has(id)) answers.set(id, { status: 'not_found', deleted: false, message: 'YouTube video not found or is private' });
    }
    return answers;
  }

  private readItem(item: Record<string, unknown>): FetchResult {
    return readOne(LABEL, () => {
      const snippet = record(item.snippet, 'snippet');
      const statistics = item.statistics === undefined ? {} : record(item.statistics, 'statistics');
      const metrics = {
        views: count(statistics.viewCount, 'viewCount'),
        likes: count(statistics.likeCount, 'likeCount'),
        comments: count(statistics.commentCount, 'commentCount'),
      };
      return {
        status: 'ok',
        metrics: definedOnly(metrics),
        metadata: {
          title: string(snippet.title, 'snippet.title'),
          creator: optionalString(snippet.channelTitle, 'snippet.channelTitle'),
          description: optionalString(snippet.description, 'snippet.description'),
        },
        provider: this.name,
      };
    });
  }

  /** A 4xx from Google: quota, rate limit or key trouble. None says anything about the videos. */
  private refusal(answer: HttpAnswer): GroupAnswer {
    const error = isRecord(answer.body) && isRecord(answer.body.error) ? answer.body.error : {};
    const message = typeof error.message === 'string' ? error.message : `HTTP ${answer.status}`;
    const reasons = Array.isArray(error.errors) ? error.errors.map((e) => (isRecord(e) ? e.reason : undefined)) : [];
    if (reasons.includes('quotaExceeded') || reasons.includes('dailyLimitExceeded')) {
      this.quota.exhaust();
      return this.backoff.block(this.quota.resetsAt(), `YouTube daily API quota is spent: ${message}`);
    }
    if (answer.status === 429 || reasons.includes('rateLimitExceeded') || reasons.includes('userRateLimitExceeded')) {
      return this.backoff.block(new Date(this.options.clock.now().getTime() + RATE_LIMIT_PAUSE_MS), `YouTube rate limit: ${message}`);
    }
    const keyTrouble = reasons.includes('keyInvalid') || /API key/i.test(message);
    if (keyTrouble || answer.status === 401 || answer.status === 403) {
      return unavailable(`YouTube refused the API key (YOUTUBE_API_KEY): ${message}`);
    }
    return unavailable(`YouTube answered HTTP ${answer.status}: ${message}`);
  }
}
