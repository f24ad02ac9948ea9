// Instagram Graph API business discovery: another professional account's recent media, read through
// our own account (INSTAGRAM_USER_ID), paged, and matched to the tracked post by shortcode. The
// media id is not the shortcode, so there is no lookup by id; one walk serves every tracked post of
// the same owner. Business discovery gives likes and comments only: saves and views need the
// owner's own token (insights), so Instagram snapshots carry likes and comments.
import type { Clock } from '../../clock.ts';
import type { Collector, FetchResult, VideoRef } from '../collector.ts';
import { Backoff } from './backoff.ts';
import { CALL_DEADLINE_MS, collectInBatches, type GroupAnswer, readOne } from './batch.ts';
import type { CallDeadline } from './call-deadline.ts';
import { DEFAULT_FETCH_TIMEOUT_MS, type Failure, type HttpAnswer, isFailure, requestJson, unavailable } from './http.ts';
import { instagramUsername, shortcodeFromPermalink } from './instagram-links.ts';
import { metaUsage } from './instagram-usage.ts';
import { array, count, definedOnly, isRecord, optionalString, record } from './json.ts';

export const INSTAGRAM_API_URL = 'https://graph.facebook.com/v25.0';
const LABEL = 'Instagram';
const SHORTCODE = /^[A-Za-z0-9_-]{1,64}$/;
const MEDIA_FIELDS = 'id,shortcode,permalink,caption,like_count,comments_count,timestamp,media_type,media_product_type';
const THROTTLE_CODES = new Set([4, 17, 32, 613]);
/** Meta's windows roll over an hour; without an estimate, wait that long. */
const DEFAULT_THROTTLE_MS = 60 * 60_000;

export interface InstagramCollectorOptions {
  readonly accessToken: string;
  /** Our own professional account, through which business discovery is asked. */
  readonly userId: string;
  readonly clock: Clock;
  readonly baseUrl?: string;
  readonly fetchTimeoutMs?: number;
  readonly pageSize?: number;
  /** A post older than pageSize * maxPages of its owner's posts is reported not found. */
  readonly maxPages?: number;
  /** How long one collect() call may spend asking (CALL_DEADLINE_MS). */
  readonly callDeadlineMs?: number;
}

export class InstagramCollector implements Collector {
  readonly name = 'instagram-graph-api';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly pageSize: number;
  private readonly maxPages: number;
  private readonly backoff: Backoff;

  constructor(private readonly options: InstagramCollectorOptions) {
    this.baseUrl = (options.baseUrl ?? INSTAGRAM_API_URL).replace(/\/+$/, '');
    this.timeoutMs = options.fetchTimeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS;
    this.pageSize = options.pageSize ?? 50;
    this.maxPages = options.maxPages ?? 20;
    this.backoff = new Backoff(options.clock);
  }

  collect(refs: readonly VideoRef[]): Promise<FetchResult[]> {
    return collectInBatches(
      LABEL,
      refs,
      {
        isValidId: (shortcode) => SHORTCODE.test(shortcode),
        group: groupByOwner,
        fetchGroup: (group, deadline) => {
          const username = instagramUsername(group[0]!.videoLink);
          return username ? this.walk(username, group, deadline) : Promise.resolve(ownerUnknown(group));
        },
      },
      this.options.callDeadlineMs ?? CALL_DEADLINE_MS,
    );
  }

  /** Pages through the owner's media until every wanted post is found or the posts run out. */
  private async walk(username: string, group: readonly VideoRef[], deadline: CallDeadline): Promise<GroupAnswer> {
    const wanted = new Set(group.map((ref) => ref.platformId));
    const answers = new Map<string, FetchResult>();
    let after: string | undefined;
    let page = 0;
    for (; page < this.maxPages && wanted.size > 0; page++) {
      // Up to maxPages pages, each up to the request timeout: the call's deadline stops the walk.
      const result = deadline.expired() ?? (await this.fetchPage(username, after, deadline));
      if ('status' in result) {
        for (const shortcode of wanted) answers.set(shortcode, result);
        return answers;
      }
      for (const post of result.posts) {
        const shortcode = typeof post.shortcode === 'string' ? post.shortcode : typeof post.permalink === 'string' ? shortcodeFromPermalink(post.permalink) : undefined;
        if (shortcode && wanted.delete(shortcode)) answers.set(shortcode, this.readPost(post, username));
      }
      after = result.after;
      if (!after) break;
    }
    const searched = after ? ` among its ${page * this.pageSize} most recent posts` : '';
    for (const shortcode of wanted) {
      answers.set(shortcode, { status: 'not_found', deleted: false, message: `Instagram post not found on @${username}${searched}` });
    }
    return answers;
  }

  private async fetchPage(username: string, after: string | undefined, deadline: CallDeadline): Promise<{ posts: Record<string, unknown>[]; after?: string } | Failure> {
    const blocked = this.backoff.blocked();
    if (blocked) return blocked;
    const media = `media${after ? `.after(${after})` : ''}.limit(${this.pageSize}){${MEDIA_FIELDS}}`;
    const url = new URL(`${this.baseUrl}/${encodeURIComponent(this.options.userId)}`);
    url.searchParams.set('fields', `business_discovery.username(${username}){username,${media}}`);
    url.searchParams.set('access_token', this.options.accessToken);
    const timeoutMs = deadline.timeout(this.timeoutMs);
    const answer = await requestJson(LABEL, url.href, { timeoutMs });
    if (isFailure(answer)) return deadline.failure(answer, timeoutMs, this.timeoutMs);
    this.noteUsage(answer.headers);
    if (answer.status !== 200 || (isRecord(answer.body) && answer.body.error !== undefined)) return this.refusal(answer, username);
    const discovery = record(record(answer.body, 'the answer').business_discovery, 'business_discovery');
    if (discovery.media === undefined) return { posts: [] }; // an account with no posts
    const mediaPage = record(discovery.media, 'media');
    // A post that is no object has no shortcode to match: it is skipped, not its owner's whole walk.
    const posts = array(mediaPage.data, 'media.data').filter(isRecord);
    const paging = isRecord(mediaPage.paging) ? mediaPage.paging : {};
    const cursor = isRecord(paging.cursors) ? paging.cursors.after : undefined;
    // `next` is left out on the last page, while the cursors are still there.
    return typeof cursor === 'string' && typeof paging.next === 'string' ? { posts, after: cursor } : { posts };
  }

  private noteUsage(headers: Headers): void {
    const usage = metaUsage(headers);
    if (usage.percent >= 100) this.throttle(usage.regainMinutes, `Instagram API usage at ${usage.percent} %`);
  }

  private throttle(regainMinutes: number, reason: string): Failure {
    const waitMs = regainMinutes > 0 ? regainMinutes * 60_000 : DEFAULT_THROTTLE_MS;
    return this.backoff.block(this.options.clock.now().getTime() + waitMs, reason);
  }

  /** Meta's error codes, not the HTTP status, say what went wrong. */
  private refusal(answer: HttpAnswer, username: string): Failure {
    const error = isRecord(answer.body) && isRecord(answer.body.error) ? answer.body.error : {};
    const code = typeof error.code === 'number' ? error.code : undefined;
    const said = `${typeof error.message === 'string' ? error.message : `HTTP ${answer.status}`}${code === undefined ? '' : ` (code ${code})`}`;
    if (code !== undefined && THROTTLE_CODES.has(code)) return this.throttle(metaUsage(answer.headers).regainMinutes, `Instagram rate limit: ${said}`);
    if (code === 190) return unavailable(`Instagram refused the access token (INSTAGRAM_ACCESS_TOKEN): ${said}`);
    if (code === 10 || (code !== undefined && code >= 200 && code <= 299)) {
      return unavailable(`Instagram refused the permission (INSTAGRAM_ACCESS_TOKEN / INSTAGRAM_USER_ID): ${said}`);
    }
    // 110 "Invalid user id" / 100: the owner does not exist or is not a professional account.
    if (code === 100 || code === 110) {
      return { status: 'not_found', deleted: false, message: `Instagram account @${username} not found or not a professional account: ${said}` };
    }
    if (answer.status === 200) return { status: 'invalid', message: `Instagram answered HTTP 200 with an error: ${said}` };
    return unavailable(`Instagram answered HTTP ${answer.status}: ${said}`);
  }

  private readPost(post: Record<string, unknown>, username: string): FetchResult {
    return readOne(LABEL, () => {
      // like_count is left out when the owner hides likes; the metric is then omitted.
      const metrics = { likes: count(post.like_count, 'like_count'), comments: count(post.comments_count, 'comments_count') };
      return {
        status: 'ok',
        metrics: definedOnly(metrics),
        metadata: { title: '', creator: username, description: optionalString(post.caption, 'caption') },
        provider: this.name,
      };
    });
  }
}

function groupByOwner(refs: readonly VideoRef[]): VideoRef[][] {
  const groups = new Map<string, VideoRef[]>();
  for (const ref of refs) {
    const owner = instagramUsername(ref.videoLink)?.toLowerCase() ?? '';
    groups.set(owner, [...(groups.get(owner) ?? []), ref]);
  }
  return [...groups.values()];
}

/** Without the owner's username business discovery cannot find the post: say so, do not guess. */
function ownerUnknown(group: readonly VideoRef[]): Map<string, FetchResult> {
  const message = 'Instagram post cannot be looked up without its owner: use a link of the form https://www.instagram.com/<username>/p/<code>/';
  return new Map(group.map((ref) => [ref.platformId, { status: 'not_found', deleted: false, message }]));
}
