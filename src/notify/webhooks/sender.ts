// One HTTP attempt of a delivery. The URL is checked again here (its name may resolve somewhere
// else since it was saved) and the connection goes to the very address that was checked, so a
// name cannot point at a public address for the check and a private one for the connection.
// Redirects are not followed (a 3xx is a failed attempt), and an attempt ends after 15 s.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkWebhookUrl, type UrlPolicy } from '../../domain/webhook-url.ts';
import { resolveEndpoint } from './address-guard.ts';
import { raceDeadline } from '../timers.ts';

export const SEND_TIMEOUT_MS = 15_000;

export interface AttemptResult {
  /** The receiver's status; null when there was no answer (refused URL, network error, timeout). */
  status: number | null;
  retryAfter: string | undefined;
  /** Why it failed, for the deliveries list; never the body the receiver sent. */
  error: string | null;
}

// No cap on sockets per host (the agents' default): the dispatcher bounds the sends in flight
// (per process and per endpoint), and a cap here would queue one endpoint's attempt behind
// another endpoint's slow ones on the same host, its 15 s running while it waits for a socket.
const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

export interface SendOptions {
  /** The whole attempt's time, the name's lookup included. */
  timeoutMs?: number;
  resolve?: typeof resolveEndpoint;
}

export async function postWebhook(urlText: string, headers: Record<string, string>, body: string, policy: UrlPolicy, options: SendOptions = {}): Promise<AttemptResult> {
  const { timeoutMs = SEND_TIMEOUT_MS, resolve: resolveAddress = resolveEndpoint } = options;
  const deadline = performance.now() + timeoutMs;
  const checked = checkWebhookUrl(urlText, policy);
  if ('error' in checked) return { status: null, retryAfter: undefined, error: checked.error };
  // A name server that never answers must not hold the attempt past its time (nor past the
  // claim on the delivery, which would let another dispatcher send it again meanwhile).
  const resolved = await raceDeadline(resolveAddress(checked.url, policy), timeoutMs, { error: `url's host did not resolve within ${timeoutMs / 1000} s` });
  if ('error' in resolved) return { status: null, retryAfter: undefined, error: resolved.error };
  const answerMs = Math.max(0, deadline - performance.now());
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: resolved.address, family: resolved.family }]);
    else callback(null, resolved.address, resolved.family);
  };
  const url = checked.url;
  const secure = url.protocol === 'https:';
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const settle = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const request = (secure ? https : http).request(
      url,
      {
        method: 'POST',
        agent: secure ? agents.https : agents.http,
        lookup: pinned,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'vidtrack-webhooks/1' },
      },
      (response) => {
        const retryAfter = response.headers['retry-after'];
        settle({ status: response.statusCode ?? null, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, error: null });
        // The answer's body is not read: only its status counts. Drained so the socket can be
        // reused, within the attempt's time still: a body that never ends must not hold the
        // socket for good.
        response.on('error', () => undefined);
        response.on('close', () => clearTimeout(timer));
        response.resume();
      },
    );
    // Settles by itself: it does not count on an 'error' following the destroy.
    const timer = setTimeout(() => {
      const error = `no answer within ${timeoutMs / 1000} s`;
      request.destroy(new Error(error));
      settle({ status: null, retryAfter: undefined, error });
    }, answerMs);
    request.on('error', (error) => {
      clearTimeout(timer);
      settle({ status: null, retryAfter: undefined, error: error.message.slice(0, 300) });
    });
    request.end(body);
  });
}
