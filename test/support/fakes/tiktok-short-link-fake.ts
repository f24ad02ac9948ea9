// Stands in for vm.tiktok.com / vt.tiktok.com / www.tiktok.com/t/: answers each configured path
// with a redirect (or an error), as TikTok's short-link service does.
import type { ServerResponse } from 'node:http';
import { PlatformFake, type RecordedRequest } from './http-fake.ts';

export interface ShortLinkAnswer {
  readonly status: number;
  readonly location?: string;
}

export class TikTokShortLinkFake extends PlatformFake {
  /** By request path, e.g. '/ZMabc123/' -> 301 to the long form. Unknown paths answer 404. */
  readonly links = new Map<string, ShortLinkAnswer>();

  static start(): Promise<TikTokShortLinkFake> {
    return new TikTokShortLinkFake().listen();
  }

  protected handle(request: RecordedRequest, response: ServerResponse): void {
    const answer = this.links.get(request.path) ?? { status: 404 };
    response.writeHead(answer.status, { 'content-type': 'text/html', ...(answer.location && { location: answer.location }) });
    response.end('<html></html>');
  }
}
