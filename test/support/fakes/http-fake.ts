// A real HTTP server on 127.0.0.1 (port 0), so that collectors run their real fetch code path
// against it. Each platform fake supplies a handler; this records every request for assertions.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

export type Handler = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

export interface HttpFake {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Waits `ms` before the handler runs (responses slower than the collector's timeout). */
  delayMs: number;
  close(): Promise<void>;
}

export async function startHttpFake(handler: Handler): Promise<HttpFake> {
  const timers = new Set<NodeJS.Timeout>();
  const requests: RecordedRequest[] = [];
  const fake = { url: '', requests, delayMs: 0, close: async () => {} } as HttpFake;
  const server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const parsed = new URL(incoming.url ?? '/', 'http://fake');
    const request: RecordedRequest = {
      method: incoming.method ?? 'GET',
      path: parsed.pathname,
      query: parsed.searchParams,
      headers: incoming.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    requests.push(request);
    if (fake.delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, fake.delayMs);
        timers.add(timer);
      });
      if (response.destroyed) return;
    }
    try {
      await handler(request, response);
    } catch (error) {
      if (!response.headersSent) sendJson(response, 599, { fakeError: String(error) });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
  return fake;
}

/** Sends `body` as JSON; a string is sent as is (hand-written JSON with big numbers, or garbage). */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  response.end(text);
}

/** JSON.stringify, except that values wrapped by `bare()` are written as bare number literals. */
export function stringifyWithBareNumbers(value: unknown): string {
  return JSON.stringify(value).replace(/"__bare__(-?\d+)"/g, '$1');
}

/** Marks a decimal string to be written as a JSON number beyond 2^53, as TikTok does with ids. */
export function bare(digits: string): string {
  return `__bare__${digits}`;
}

/** What every platform fake shares: one server, its request log, a delay knob, and close(). */
export abstract class PlatformFake {
  private http: HttpFake | undefined;

  protected abstract handle(request: RecordedRequest, response: ServerResponse): void | Promise<void>;

  /** Starts the server; subclasses expose it as `static start()`. */
  protected async listen(): Promise<this> {
    this.http = await startHttpFake((request, response) => this.handle(request, response));
    return this;
  }

  /** The server's origin, http://127.0.0.1:<port>. */
  get origin(): string {
    return this.server.url;
  }

  get requests(): RecordedRequest[] {
    return this.server.requests;
  }

  /** Answers this late (to go past a collector's timeout). */
  set delayMs(ms: number) {
    this.server.delayMs = ms;
  }

  close(): Promise<void> {
    return this.server.close();
  }

  private get server(): HttpFake {
    if (!this.http) throw new Error('fake not started');
    return this.http;
  }
}
