// Speaks TikTok's client-credentials token endpoint and Research API video query as documented in
// shared/research/platform-apis.md §3: ids written as bare JSON numbers beyond 2^53, the error
// envelope on every answer, and the creation-date window the query requires.
import type { ServerResponse } from 'node:http';
import { bare, PlatformFake, type RecordedRequest, sendJson, stringifyWithBareNumbers } from './http-fake.ts';

export interface FakeTikTokVideo {
  readonly username: string;
  readonly description: string;
  readonly viewCount: number;
  readonly likeCount: number;
  readonly commentCount: number;
  readonly shareCount: number;
  readonly favouritesCount: number;
}

export type TikTokBehaviour = 'normal' | 'rate-limited' | 'daily-quota' | 'scope-not-authorized' | 'server-error' | 'malformed';

/** A TikTok-shaped id created at `at`: creation seconds in the top 32 bits. */
export function tiktokIdAt(at: Date | string, serial: number): string {
  return ((BigInt(Math.floor(new Date(at).getTime() / 1000)) << 32n) + BigInt(serial)).toString();
}

export class TikTokFake extends PlatformFake {
  readonly videos = new Map<string, FakeTikTokVideo>();
  behaviour: TikTokBehaviour = 'normal';
  /** Sent as is after the videos of each page: videos in shapes TikTok does not document. */
  readonly oddVideos: unknown[] = [];
  /** The Retry-After of a 'rate-limited' answer. */
  retryAfter = '120';
  readonly clientKey = 'test-client-key';
  readonly clientSecret = 'test-client-secret';
  tokenLifetimeSeconds = 7200;
  /** Videos per page; below 100 the answer pages with cursor / has_more. */
  pageSize = 100;
  tokensIssued = 0;
  private readonly validTokens = new Set<string>();

  static start(): Promise<TikTokFake> {
    return new TikTokFake().listen();
  }

  get baseUrl(): string {
    return this.origin;
  }

  queries(): RecordedRequest[] {
    return this.requests.filter((request) => request.path === '/v2/research/video/query/');
  }

  /** The ids asked for, one array per video query. */
  idsPerQuery(): string[][] {
    return this.queries().map((request) => JSON.parse(request.body).query.and[0].field_values);
  }

  /** TikTok forgets every token it issued (as if they expired early). */
  revokeTokens(): void {
    this.validTokens.clear();
  }

  protected handle(request: RecordedRequest, response: ServerResponse): void {
    if (request.method === 'POST' && request.path === '/v2/oauth/token/') return this.token(request, response);
    if (request.method === 'POST' && request.path === '/v2/research/video/query/') return this.query(request, response);
    envelope(response, 404, 'not_found', 'Unknown path');
  }

  private token(request: RecordedRequest, response: ServerResponse): void {
    const form = new URLSearchParams(request.body);
    if (form.get('grant_type') !== 'client_credentials' || form.get('client_key') !== this.clientKey || form.get('client_secret') !== this.clientSecret) {
      return sendJson(response, 401, { error: 'invalid_client', error_description: 'Client key or secret is incorrect.', log_id: 'log-token' });
    }
    this.tokensIssued += 1;
    const token = `clt.fake${this.tokensIssued}`;
    this.validTokens.add(token);
    sendJson(response, 200, { access_token: token, expires_in: this.tokenLifetimeSeconds, token_type: 'Bearer' });
  }

  private query(request: RecordedRequest, response: ServerResponse): void {
    const token = /^Bearer (.+)$/i.exec(String(request.headers.authorization ?? ''))?.[1];
    if (!token || !this.validTokens.has(token)) return envelope(response, 401, 'access_token_invalid', 'The access token is invalid or not found in the request.');
    switch (this.behaviour) {
      case 'rate-limited':
        return envelope(response, 429, 'rate_limit_exceeded', 'API rate limit exceeded', { 'retry-after': this.retryAfter });
      case 'daily-quota':
        return envelope(response, 429, 'rate_limit_exceeded', 'daily quota limit exceeded');
      case 'scope-not-authorized':
        return envelope(response, 401, 'scope_not_authorized', 'The user did not authorize the scope required for completing this request.');
      case 'server-error':
        return envelope(response, 500, 'internal_error', 'Something went wrong. Please try again later.');
      case 'malformed':
        return sendJson(response, 200, '{"data":{"videos":[{"id":7');
    }
    const fields = (request.query.get('fields') ?? '').split(',');
    const body = JSON.parse(request.body);
    const condition = body?.query?.and?.[0];
    const ids: unknown = condition?.field_values;
    const window = dateWindow(body?.start_date, body?.end_date);
    if (!fields.includes('favourites_count') || condition?.operation !== 'IN' || condition?.field_name !== 'video_id' || !Array.isArray(ids)
      || ids.length > 100 || ids.some((id) => typeof id !== 'string') || !window || !(body.max_count <= 100)) {
      return envelope(response, 400, 'invalid_params', 'Invalid parameters');
    }
    // Private, deleted and out-of-window videos are silently left out, as TikTok does.
    const found = (ids as string[]).filter((id) => {
      const created = Number(BigInt(id) >> 32n) * 1000;
      return this.videos.has(id) && created >= window.start && created < window.endExclusive;
    });
    const cursor = typeof body.cursor === 'number' ? body.cursor : 0;
    const page = found.slice(cursor, cursor + this.pageSize);
    const videos = page.map((id) => {
      const video = this.videos.get(id)!;
      return {
        id: bare(id),
        username: video.username,
        video_description: video.description,
        create_time: Number(BigInt(id) >> 32n),
        view_count: video.viewCount,
        like_count: video.likeCount,
        comment_count: video.commentCount,
        share_count: video.shareCount,
        favourites_count: video.favouritesCount,
      };
    });
    const hasMore = cursor + this.pageSize < found.length;
    const answer = { data: { videos: [...videos, ...this.oddVideos], cursor: cursor + page.length, has_more: hasMore, search_id: 'search-1' }, error: { code: 'ok', message: '', log_id: 'log-ok' } };
    sendJson(response, 200, stringifyWithBareNumbers(answer));
  }
}

function envelope(response: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  sendJson(response, status, { error: { code, message, log_id: `log-${code}` } }, headers);
}

/** start_date..end_date (YYYYMMDD, inclusive, UTC), at most 30 days apart; undefined when invalid. */
function dateWindow(startDate: unknown, endDate: unknown): { start: number; endExclusive: number } | undefined {
  const day = (text: unknown) => {
    const match = typeof text === 'string' ? /^(\d{4})(\d{2})(\d{2})$/.exec(text) : null;
    return match ? Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])) : undefined;
  };
  const start = day(startDate);
  const end = day(endDate);
  if (start === undefined || end === undefined || end < start || end - start > 30 * 86_400_000) return undefined;
  return { start, endExclusive: end + 86_400_000 };
}
