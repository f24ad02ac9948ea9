// Speaks YouTube Data API v3 `videos.list` as documented in shared/research/platform-apis.md §1.
import type { ServerResponse } from 'node:http';
import { PlatformFake, type RecordedRequest, sendJson } from './http-fake.ts';

export interface FakeYouTubeVideo {
  readonly title: string;
  readonly channelTitle: string;
  readonly description: string;
  /** Counts as YouTube sends them (strings); leave one out to hide it. */
  readonly statistics: Partial<Record<'viewCount' | 'likeCount' | 'favoriteCount' | 'commentCount', string>>;
}

const QUOTA_MESSAGE = 'The request cannot be completed because you have exceeded your <a href="/youtube/v3/getting-started#quota">quota</a>.';

export type YouTubeBehaviour = 'normal' | 'quota-exceeded' | 'server-error' | 'malformed' | 'bad-item';

export class YouTubeFake extends PlatformFake {
  readonly videos = new Map<string, FakeYouTubeVideo>();
  behaviour: YouTubeBehaviour = 'normal';
  /** Sent as is after the items found: items in shapes YouTube does not document. */
  readonly oddItems: unknown[] = [];
  readonly apiKey = 'test-youtube-key';

  static start(): Promise<YouTubeFake> {
    return new YouTubeFake().listen();
  }

  /** The base URL to give the collector (the API's path prefix included). */
  get baseUrl(): string {
    return `${this.origin}/youtube/v3`;
  }

  /** The ids asked for, one array per call. */
  idsPerRequest(): string[][] {
    return this.requests.map((request) => (request.query.get('id') ?? '').split(',').filter(Boolean));
  }

  protected handle(request: RecordedRequest, response: ServerResponse): void {
    if (request.path !== '/youtube/v3/videos') return sendJson(response, 404, { error: { code: 404, message: 'Not Found' } });
    const key = request.query.get('key');
    if (!key) return sendJson(response, 403, googleError(403, 'The request is missing a valid API key.', 'global', 'forbidden'));
    if (key !== this.apiKey) return sendJson(response, 400, googleError(400, 'API key not valid. Please pass a valid API key.', 'global', 'badRequest'));
    if (request.query.get('part') !== 'snippet,statistics') return sendJson(response, 400, googleError(400, 'bad part', 'global', 'invalidParameter'));
    switch (this.behaviour) {
      case 'quota-exceeded':
        return sendJson(response, 403, googleError(403, QUOTA_MESSAGE, 'youtube.quota', 'quotaExceeded'));
      case 'server-error':
        return sendJson(response, 503, googleError(503, 'The service is currently unavailable.', 'global', 'backendError'));
      case 'malformed':
        response.writeHead(200, { 'content-type': 'application/json' });
        return void response.end('{"kind":"youtube#videoListResponse","items":[{"id":');
    }
    const ids = (request.query.get('id') ?? '').split(',').filter(Boolean);
    if (ids.length > 50) return sendJson(response, 400, googleError(400, 'too many ids', 'youtube.parameter', 'invalidFilters'));
    const items = ids.flatMap((id) => {
      const video = this.videos.get(id);
      if (!video) return [];
      const statistics = this.behaviour === 'bad-item' ? { viewCount: 'lots' } : video.statistics;
      return [{
        kind: 'youtube#video',
        etag: `etag-${id}`,
        id,
        snippet: { publishedAt: '2026-01-01T00:00:00Z', channelId: 'UCfake', title: video.title, description: video.description, channelTitle: video.channelTitle },
        statistics,
      }];
    });
    sendJson(response, 200, { kind: 'youtube#videoListResponse', etag: 'etag', items: [...items, ...this.oddItems], pageInfo: { totalResults: items.length, resultsPerPage: items.length } });
  }
}

function googleError(code: number, message: string, domain: string, reason: string): unknown {
  return { error: { code, message, errors: [{ message, domain, reason }] } };
}
