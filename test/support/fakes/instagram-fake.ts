// Speaks the Instagram Graph API's business discovery as documented in
// shared/research/platform-apis.md §4: media paged with cursors, Meta's error envelope and codes,
// and the usage headers.
import type { ServerResponse } from 'node:http';
import { PlatformFake, type RecordedRequest, sendJson } from './http-fake.ts';

export interface FakeInstagramPost {
  readonly id: string;
  readonly shortcode: string;
  readonly caption?: string;
  /** Left out when the owner hides likes. */
  readonly likeCount?: number;
  readonly commentsCount: number;
  /** Sent instead of the post's real permalink: whatever JSON a broken answer might hold. */
  readonly permalink?: unknown;
}

export type InstagramBehaviour = 'normal' | 'throttled' | 'server-error' | 'malformed';

export class InstagramFake extends PlatformFake {
  /** Professional accounts by username; posts newest first. */
  readonly accounts = new Map<string, FakeInstagramPost[]>();
  behaviour: InstagramBehaviour = 'normal';
  /** Sent as is after the posts of each page: posts in shapes Meta does not document. */
  readonly oddPosts: unknown[] = [];
  readonly accessToken = 'test-instagram-token';
  readonly userId = '17841400000000001';
  /** Sent as X-Business-Use-Case-Usage when set. */
  businessUsage: unknown;
  /** Answers without the `shortcode` field, leaving only `permalink` to match on. */
  omitShortcode = false;

  static start(): Promise<InstagramFake> {
    return new InstagramFake().listen();
  }

  get baseUrl(): string {
    return `${this.origin}/v25.0`;
  }

  protected handle(request: RecordedRequest, response: ServerResponse): void {
    const headers: Record<string, string> = this.businessUsage === undefined ? {} : { 'x-business-use-case-usage': JSON.stringify(this.businessUsage) };
    const fail = (status: number, message: string, code: number, subcode?: number) =>
      sendJson(response, status, { error: { message, type: 'OAuthException', code, ...(subcode && { error_subcode: subcode }), fbtrace_id: 'trace' } }, headers);
    if (request.query.get('access_token') !== this.accessToken) return fail(400, 'Invalid OAuth access token - Cannot parse access token', 190);
    if (request.path !== `/v25.0/${this.userId}`) {
      return fail(400, `Unsupported get request. Object with ID '${request.path}' does not exist, cannot be loaded due to missing permissions, or does not support this operation`, 100, 33);
    }
    switch (this.behaviour) {
      case 'throttled':
        return fail(400, 'Application request limit reached', 4);
      case 'server-error':
        return fail(500, 'An unexpected error has occurred. Please retry your request later.', 2);
      case 'malformed':
        return sendJson(response, 200, { business_discovery: { username: 'x', media: { data: 'nope' } }, id: this.userId }, headers);
    }
    const fields = request.query.get('fields') ?? '';
    const match = /^business_discovery\.username\(([^)]+)\)\{username,media(?:\.after\(([^)]+)\))?(?:\.limit\((\d+)\))?\{([^}]+)\}\}$/.exec(fields);
    if (!match) return fail(400, 'Syntax error in fields', 100);
    const [, username, after, limit, mediaFields] = match;
    const posts = this.accounts.get(username!);
    if (!posts) return fail(400, 'Invalid user id', 110, 2207013);
    const pageSize = Math.min(Number(limit ?? 25), 100);
    const offset = after ? Number(Buffer.from(after, 'base64url').toString()) : 0;
    const page = posts.slice(offset, offset + pageSize);
    const wanted = new Set(mediaFields!.split(','));
    const data = page.map((post) => {
      const full: Record<string, unknown> = {
        id: post.id,
        shortcode: this.omitShortcode ? undefined : post.shortcode,
        permalink: 'permalink' in post ? post.permalink : `https://www.instagram.com/p/${post.shortcode}/`,
        caption: post.caption,
        like_count: post.likeCount,
        comments_count: post.commentsCount,
        timestamp: '2026-01-01T00:00:00+0000',
        media_type: 'VIDEO',
        media_product_type: 'REELS',
      };
      return Object.fromEntries(Object.entries(full).filter(([key, value]) => wanted.has(key) && value !== undefined));
    });
    const cursor = (at: number) => Buffer.from(String(at)).toString('base64url');
    const more = offset + pageSize < posts.length;
    const paging = { cursors: { before: cursor(offset), after: cursor(offset + page.length) }, ...(more && { next: `${this.baseUrl}/next-page` }) };
    sendJson(response, 200, { business_discovery: { username, media: { data: [...data, ...this.oddPosts], paging }, id: `ig-${username}` }, id: this.userId }, headers);
  }
}
