// The Research API takes a client-credentials token that lives 2 hours. One token is shared by all
// calls, fetched once, and replaced shortly before it expires so that no query goes out with a
// token about to die; concurrent callers wait on the same fetch instead of each asking for one.
import type { Clock } from '../../clock.ts';
import { type Failure, isFailure, requestJson, unavailable } from './http.ts';
import { isRecord } from './json.ts';

const LABEL = 'TikTok';
/** Replace the token this long before TikTok's expiry (or at half its life, if that is sooner). */
const REFRESH_MARGIN_MS = 5 * 60_000;

export interface TikTokTokenOptions {
  readonly baseUrl: string;
  readonly clientKey: string;
  readonly clientSecret: string;
  readonly clock: Clock;
  readonly timeoutMs: number;
}

export class TikTokClientToken {
  private current: { value: string; refreshAt: number } | undefined;
  private pending: Promise<string | Failure> | undefined;

  constructor(private readonly options: TikTokTokenOptions) {}

  /** A token good for the next call, or why none could be had. */
  get(): Promise<string | Failure> {
    if (this.current && this.options.clock.now().getTime() < this.current.refreshAt) {
      return Promise.resolve(this.current.value);
    }
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** TikTok rejected `value` before we expected: forget it so that the next get() fetches anew. */
  invalidate(value: string): void {
    if (this.current?.value === value) this.current = undefined;
  }

  private async fetchToken(): Promise<string | Failure> {
    const answer = await requestJson(LABEL, `${this.options.baseUrl}/v2/oauth/token/`, {
      method: 'POST',
      timeoutMs: this.options.timeoutMs,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-cache' },
      body: new URLSearchParams({
        client_key: this.options.clientKey,
        client_secret: this.options.clientSecret,
        grant_type: 'client_credentials',
      }).toString(),
    });
    if (isFailure(answer)) return answer;
    const body = isRecord(answer.body) ? answer.body : {};
    const { access_token: value, expires_in: expiresIn } = body;
    if (answer.status === 200 && typeof value === 'string' && value !== '' && typeof expiresIn === 'number' && expiresIn > 0) {
      const lifetimeMs = expiresIn * 1000;
      const refreshAt = this.options.clock.now().getTime() + Math.max(lifetimeMs - REFRESH_MARGIN_MS, lifetimeMs / 2);
      this.current = { value, refreshAt };
      return value;
    }
    if (typeof body.error === 'string') {
      // OAuth errors (invalid_client, ...) say the credentials are wrong, not that the body is odd.
      const description = typeof body.error_description === 'string' ? `: ${body.error_description}` : '';
      return unavailable(`TikTok refused the client credentials (TIKTOK_CLIENT_KEY / TIKTOK_CLIENT_SECRET): ${body.error}${description}`);
    }
    if (answer.status !== 200) return unavailable(`TikTok token endpoint answered HTTP ${answer.status}`);
    return { status: 'invalid', message: 'TikTok token endpoint answered without access_token / expires_in' };
  }
}
