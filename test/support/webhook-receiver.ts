// A real webhook receiver for tests: node:http on 127.0.0.1, port 0. It verifies every request
// with the `standardwebhooks` reference implementation against each secret it was told of for
// that path, records what came, and answers as the test scripted (a status list per path,
// consumed one per request, then 200).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { after, before } from 'node:test';
import { comparePositions } from '../../src/eventstore/port.ts';
import { newestCommittedOn } from '../../src/eventstore/postgres.ts';
import { readCheckpoint } from '../../src/notify/checkpoint.ts';
import { startTestService, type TestService } from './service.ts';
import { until } from './wait.ts';

export interface Received {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  json: { type: string; timestamp: string; data: any };
  /** For each secret of the path (in the order given), whether the reference verifier accepted it. */
  verifiedWith: boolean[];
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  /** Holds the answer until this resolves (a slow receiver, or a kill between send and answer). */
  hold?: Promise<void>;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly secrets = new Map<string, string[]>();
  private readonly scripts = new Map<string, Answer[]>();
  private server: http.Server | null = null;
  private readonly sockets = new Set<import('node:net').Socket>();
  url = '';

  async start(): Promise<this> {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', () => {
        const path = request.url ?? '/';
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = {
          'webhook-id': String(request.headers['webhook-id'] ?? ''),
          'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
          'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
        };
        const verifiedWith = (this.secrets.get(path) ?? []).map((secret) => {
          try {
            new Webhook(secret).verify(body, headers);
            return true;
          } catch {
            return false;
          }
        });
        let json: Received['json'];
        try {
          json = JSON.parse(body);
        } catch {
          json = { type: '(not JSON)', timestamp: '', data: null };
        }
        this.received.push({ path, id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, json, verifiedWith });
        const answer = this.scripts.get(path)?.shift() ?? { status: 200 };
        const send = () => {
          if (response.destroyed) return;
          response.writeHead(answer.status, answer.headers ?? {});
          response.end();
        };
        if (answer.hold) answer.hold.then(send, send);
        else send();
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Secrets the requests to `path` are checked against. */
  expect(path: string, ...secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  /** The next answers to requests on `path`, in order (then 200). */
  script(path: string, ...answers: Array<Answer | number>): void {
    this.scripts.set(path, answers.map((a) => (typeof a === 'number' ? { status: a } : a)));
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Waits (bounded) until `path` has received at least `count` requests. */
  async waitFor(path: string, count: number, timeoutMs = 10_000): Promise<Received[]> {
    return until(`${count} webhook request(s) on ${path} (got ${this.on(path).length})`, () => (this.on(path).length >= count ? this.on(path) : undefined), timeoutMs, 10);
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = null;
  }
}

/**
 * Waits (bounded) until the webhook reactor's checkpoint has passed every event in the log and
 * the dispatcher has nothing in flight: then a request that has not come will not come.
 */
export async function webhooksQuiet(service: { db: { pool: import('pg').Pool }; settle(): Promise<void>; webhooks: { dispatcher: { idle(): Promise<void> } } | null }): Promise<void> {
  await service.settle();
  const newest = await newestCommittedOn(service.db.pool);
  if (newest) {
    await until('the webhook reactor to pass the newest event of the log', async () => {
      const passed = await readCheckpoint(service.db.pool, 'webhooks.checkpoint');
      return passed && comparePositions(passed, newest) >= 0 ? true : undefined;
    }, 10_000, 10);
  }
  await service.webhooks!.dispatcher.idle();
}

/**
 * A service with webhooks on (the receiver's 127.0.0.1 allowed as a target) and a receiver,
 * started before the calling file's tests and stopped after them, also when they fail.
 */
/**
 * Runs `append` with the webhook reactor behind it: a transaction of the test's stays open
 * meanwhile, and readers of the log see nothing committed after it began until it ends, so the
 * reactor reads every event of `append` on one page once they are all in the log (as after a
 * restart, or while it waits for the projector). The requests are answered once their
 * read-your-writes wait gives up. The transaction ends also on failure.
 */
export async function withReactorBehind<T>(service: { db: { pool: import('pg').Pool } }, append: () => Promise<T>): Promise<T> {
  const horizon = await service.db.pool.connect();
  try {
    await horizon.query('BEGIN; SELECT pg_current_xact_id()');
    const result = await append();
    await horizon.query('COMMIT');
    return result;
  } finally {
    await horizon.query('ROLLBACK').catch(() => undefined);
    horizon.release();
  }
}

export function webhookFixture(): { readonly service: TestService; readonly receiver: WebhookReceiver } {
  let service: TestService | undefined;
  let receiver: WebhookReceiver | undefined;
  before(async () => {
    receiver = await new WebhookReceiver().start();
    service = await startTestService({ webhooks: true, env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' } });
  });
  after(async () => {
    try {
      await service?.close();
    } finally {
      await receiver?.stop();
    }
  });
  return {
    get service() {
      if (!service) throw new Error('the webhook fixture is used before its before() hook ran');
      return service;
    },
    get receiver() {
      if (!receiver) throw new Error('the webhook fixture is used before its before() hook ran');
      return receiver;
    },
  };
}
