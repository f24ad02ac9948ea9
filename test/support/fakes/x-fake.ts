// Speaks X API v2 `GET /2/tweets` as documented in shared/research/platform-apis.md §2, including
// the x-rate-limit-* headers on every answer and a 429 once the window is used up.
import type { ServerResponse } from 'node:http';
import { PlatformFake, type RecordedRequest, sendJson } from './http-fake.ts';

export interface FakeTweet {
  readonly text: string;
  /** `username` left out: a user entry in a shape X does not document. */
  readonly author: { readonly id: string; readonly username?: string; readonly name: string };
  readonly publicMetrics: {
    retweet_count: number;
    reply_count: number;
    like_count: number;
    quote_count: number;
    bookmark_count: number;
    impression_count?: number;
  };
}

export type XBehaviour = 'normal' | 'server-error' | 'malformed' | 'wrong-shape';

export class XFake extends PlatformFake {
  readonly tweets = new Map<string, FakeTweet>();
  /** Ids of protected posts: an Authorization Error in `errors`. */
  readonly protectedIds = new Set<string>();
  behaviour: XBehaviour = 'normal';
  /** Sent as is after the posts found: entries in shapes X does not document. */
  readonly oddPosts: unknown[] = [];
  /** Sent as is after the users of the posts found, in `includes.users`. */
  readonly oddUsers: unknown[] = [];
  /** Sent as is after the per-post errors. */
  readonly oddErrors: unknown[] = [];
  readonly bearerToken = 'test-x-bearer';
  /** The rate-limit window: configurable, since limits differ by tier. */
  limit = 300;
  remaining = 300;
  /** Unix seconds at which the window resets. */
  resetAt = 0;

  static start(): Promise<XFake> {
    return new XFake().listen();
  }

  get baseUrl(): string {
    return this.origin;
  }

  idsPerRequest(): string[][] {
    return this.requests.map((request) => (request.query.get('ids') ?? '').split(',').filter(Boolean));
  }

  protected handle(request: RecordedRequest, response: ServerResponse): void {
    if (request.headers.authorization !== `Bearer ${this.bearerToken}`) {
      return sendJson(response, 401, { title: 'Unauthorized', type: 'about:blank', status: 401, detail: 'Unauthorized' });
    }
    const window = () => ({
      'x-rate-limit-limit': String(this.limit),
      'x-rate-limit-remaining': String(this.remaining),
      'x-rate-limit-reset': String(this.resetAt),
    });
    if (this.remaining <= 0) {
      return sendJson(response, 429, { title: 'Too Many Requests', detail: 'Too Many Requests', type: 'about:blank', status: 429 }, window());
    }
    this.remaining -= 1;
    if (this.behaviour === 'server-error') return sendJson(response, 503, { title: 'Service Unavailable', status: 503 }, window());
    if (this.behaviour === 'malformed') return sendJson(response, 200, '<html>Over capacity</html>', window());
    if (this.behaviour === 'wrong-shape') return sendJson(response, 200, { data: [{ id: 1, public_metrics: 'many' }] }, window());
    if (request.path !== '/2/tweets') return sendJson(response, 404, { title: 'Not Found Error', status: 404 }, window());
    const ids = (request.query.get('ids') ?? '').split(',').filter(Boolean);
    if (ids.length === 0 || ids.length > 100 || ids.some((id) => !/^\d{1,19}$/.test(id))) {
      const body = {
        errors: [{ parameters: { ids }, message: 'The `ids` query parameter value is invalid' }],
        title: 'Invalid Request',
        detail: 'One or more parameters to your request was invalid.',
        type: 'https://api.twitter.com/2/problems/invalid-request',
      };
      return sendJson(response, 400, body, window());
    }
    const data: unknown[] = [];
    const users = new Map<string, FakeTweet['author']>();
    const errors: unknown[] = [];
    for (const id of ids) {
      const tweet = this.tweets.get(id);
      if (this.protectedIds.has(id)) {
        errors.push(resourceError(id, `Sorry, you are not authorized to see the Tweet with ids: [${id}].`, 'Authorization Error', 'not-authorized-for-resource'));
      } else if (!tweet) {
        errors.push(resourceError(id, `Could not find tweet with ids: [${id}].`, 'Not Found Error', 'resource-not-found'));
      } else {
        const createdAt = '2026-01-01T00:00:00.000Z';
        data.push({ id, text: tweet.text, author_id: tweet.author.id, created_at: createdAt, edit_history_tweet_ids: [id], public_metrics: tweet.publicMetrics });
        users.set(tweet.author.id, tweet.author);
      }
    }
    // Like X: `data` and `includes` only when something was found, `errors` only when something failed.
    data.push(...this.oddPosts);
    const userList = [...users.values(), ...this.oddUsers];
    errors.push(...this.oddErrors);
    const body: Record<string, unknown> = {};
    if (data.length > 0) body.data = data;
    if (userList.length > 0) body.includes = { users: userList };
    if (errors.length > 0) body.errors = errors;
    sendJson(response, 200, body, window());
  }
}

function resourceError(id: string, detail: string, title: string, problem: string): unknown {
  return { value: id, detail, title, resource_type: 'tweet', parameter: 'ids', resource_id: id, type: `https://api.twitter.com/2/problems/${problem}` };
}
