// Stands in for vm.tiktok.com / vt.tiktok.com / www.tiktok.com/t/: answers each configured path
// with a redirect (or an error), as TikTok's short-link service does.
import { type HttpFake, type RecordedRequest, startHttpFake } from './http-fake.ts';

export interface ShortLinkAnswer {
  readonly status: number;
  readonly location?: string;
}

export class TikTokShortLinkFake {
  /** By request path, e.g. '/ZMabc123/' -> 301 to the long form. Unknown paths answer 404. */
  readonly links = new Map<string, ShortLinkAnswer>();

  private constructor(private readonly http: HttpFake) {}

  static async start(): Promise<TikTokShortLinkFake> {
    let fake: TikTokShortLinkFake | undefined;
    const http = await startHttpFake((request, response) => {
      const answer = fake!.links.get(request.path) ?? { status: 404 };
      response.writeHead(answer.status, answer.location ? { location: answer.location, 'content-type': 'text/html' } : { 'content-type': 'text/html' });
      response.end('<html></html>');
    });
    fake = new TikTokShortLinkFake(http);
    return fake;
  }

  get origin(): string {
    return this.http.url;
  }

  get requests(): RecordedRequest[] {
    return this.http.requests;
  }

  set delayMs(ms: number) {
    this.http.delayMs = ms;
  }

  close(): Promise<void> {
    return this.http.close();
  }
}
