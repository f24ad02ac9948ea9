// X API v2 `GET /2/tweets`: 100 ids a call. Missing and protected tweets come back in `errors`
// beside the found ones (HTTP 200); every answer carries the rate-limit window in
// x-rate-limit-remaining / x-rate-limit-reset (Unix seconds), which we obey before the 429 comes.
import type { Clock } from '../../clock.ts';
import type { Collector, FetchResult, VideoRef } from '../collector.ts';
import { Backoff } from './backoff.ts';
import { chunksOf, collectInBatches, type GroupAnswer, readOne } from './batch.ts';
import type { CallDeadline } from './call-deadline.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, type HttpAnswer, isFailure, requestJson, unavailable } from './http.ts';
import { array, count, definedOnly, id, identified, isRecord, Malformed, record, string } from './json.ts';

export const X_API_URL = 'https://api.x.com';
const LABEL = 'X';
const IDS_PER_CALL = 100;
const TWEET_ID = /^\d{1,20}$/;
/** A 429 without a reset header: X's windows are 15 minutes long. */
const DEFAULT_WINDOW_MS = 15 * 60_000;

export interface TwitterCollectorOptions {
  readonly bearerToken: string;
  readonly clock: Clock;
  readonly baseUrl?: string;
  readonly fetchTimeoutMs?: number;
}

export class TwitterCollector implements Collector {
  readonly name = 'x-api-v2';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly backoff: Backoff;

  constructor(private readonly options: TwitterCollectorOptions) {
    this.baseUrl = (options.baseUrl ?? X_API_URL).replace(/\/+$/, '');
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.backoff = new Backoff(options.clock);
  }

  collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
    return collectInBatches(LABEL, refs, {
      isValidId: (tweetId) => TWEET_ID.test(tweetId),
      group: chunksOf(IDS_PER_CALL),
      fetchGroup: (group, deadline) => this.fetchGroup(group.map((ref) => ref.platformId), deadline),
    });
  }

  private async fetchGroup(ids: readonly string[], deadline: CallDeadline): Promise<GroupAnswer> {
    const blocked = this.backoff.blocked();
    if (blocked) return blocked;
    const url = new URL(`${this.baseUrl}/2/tweets`);
    url.searchParams.set('ids', ids.join(','));
    url.searchParams.set('tweet.fields', 'created_at,public_metrics,author_id');
    url.searchParams.set('expansions', 'author_id');
    url.searchParams.set('user.fields', 'username,name');
    const timeoutMs = deadline.timeout(this.timeoutMs);
    const answer = await requestJson(LABEL, url.href, {
      timeoutMs,
      headers: { authorization: `Bearer ${this.options.bearerToken}` },
    });
    if (isFailure(answer)) return deadline.failure(answer, timeoutMs, this.timeoutMs);
    if (answer.status === 429) return this.blockFor(answer, 'X rate limit reached (HTTP 429)');
    this.noteWindow(answer);
    if (answer.status !== 200) return refusal(answer);
    return this.readTweets(answer.body, ids);
  }

  /** The window is used up: hold every call until X's reset, even though this answer succeeded. */
  private noteWindow(answer: HttpAnswer): void {
    if (answer.headers.get('x-rate-limit-remaining') === '0') this.blockFor(answer, 'X rate limit window is used up');
  }

  private blockFor(answer: HttpAnswer, reason: string): GroupAnswer {
    const reset = answer.headers.get('x-rate-limit-reset');
    const until = reset && /^\d+$/.test(reset)
      ? Number(reset) * 1000
      : this.options.clock.now().getTime() + DEFAULT_WINDOW_MS;
    return this.backoff.block(until, reason);
  }

  private readTweets(body: unknown, ids: readonly string[]): Map<string, FetchResult> {
    const root = record(body, 'the answer');
    if (root.data === undefined && root.errors === undefined) throw new Malformed('neither data nor errors');
    const includes = root.includes === undefined ? {} : record(root.includes, 'includes');
    // Users are read with the posts that name them: an odd user entry costs only its own posts.
    const users = new Map<string, Record<string, unknown>>();
    for (const user of includes.users === undefined ? [] : array(includes.users, 'includes.users')) {
      const read = identified(user);
      if (read) users.set(read.id, read.fields);
    }
    const answers = new Map<string, FetchResult>();
    for (const problem of root.errors === undefined ? [] : array(root.errors, 'errors')) {
      if (!isRecord(problem)) continue;
      const tweetId = typeof problem.resource_id === 'string' ? problem.resource_id : problem.value;
      if (typeof tweetId === 'string') answers.set(tweetId, notFound(problem));
    }
    for (const tweet of root.data === undefined ? [] : array(root.data, 'data')) {
      const read = identified(tweet);
      if (read) answers.set(read.id, this.readTweet(read.fields, users));
    }
    for (const tweetId of ids) {
      if (!answers.has(tweetId)) answers.set(tweetId, { status: 'not_found', deleted: false, message: 'X did not return this post' });
    }
    return answers;
  }

  private readTweet(tweet: Record<string, unknown>, users: ReadonlyMap<string, Record<string, unknown>>): FetchResult {
    return readOne(LABEL, () => {
      const publicMetrics = record(tweet.public_metrics, 'public_metrics');
      const replies = count(publicMetrics.reply_count, 'reply_count');
      const retweets = count(publicMetrics.retweet_count, 'retweet_count');
      // DESIGN §8: comments = replies, shares = retweets, and both are also kept under their own names.
      const metrics = {
        views: count(publicMetrics.impression_count, 'impression_count'),
        likes: count(publicMetrics.like_count, 'like_count'),
        comments: replies,
        shares: retweets,
        retweets,
        replies,
      };
      const authorId = tweet.author_id === undefined ? undefined : id(tweet.author_id, 'author_id');
      const author = authorId === undefined ? undefined : users.get(authorId);
      return {
        status: 'ok',
        metrics: definedOnly(metrics),
        // Posts have no title: the text is the description, the author's handle the creator.
        metadata: { title: '', creator: author ? string(author.username, 'user username') : '', description: string(tweet.text, 'text') },
        provider: this.name,
      };
    });
  }
}

/** A per-post error: "Not Found Error" means gone; "Authorization Error" means protected. */
function notFound(problem: Record<string, unknown>): FetchResult {
  const type = typeof problem.type === 'string' ? problem.type : '';
  const detail = typeof problem.detail === 'string' ? problem.detail : 'X could not return this post';
  return { status: 'not_found', deleted: type.endsWith('/resource-not-found'), message: detail };
}

function refusal(answer: HttpAnswer): GroupAnswer {
  const body = isRecord(answer.body) ? answer.body : {};
  const detail = typeof body.detail === 'string' ? body.detail : typeof body.title === 'string' ? body.title : `HTTP ${answer.status}`;
  if (answer.status === 401 || answer.status === 403) return unavailable(`X refused the bearer token (X_BEARER_TOKEN): ${detail}`);
  return unavailable(`X answered HTTP ${answer.status}: ${detail}`);
}
