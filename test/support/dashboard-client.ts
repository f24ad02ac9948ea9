// The dashboard over HTTP as a browser uses it, without one: its cookies (the session's, the
// CSRF secret's) kept from answer to answer, and each form posted with the token of the page
// that carries it. Answers come from app.inject: no port, no redirect followed.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { SESSION_COOKIE } from '../../src/dashboard/sessions.ts';

export class DashboardClient {
  private readonly cookies = new Map<string, string>();
  private readonly from: string | undefined;

  /** `from`: the client's address (sign-in is limited to 20 a minute per address). */
  constructor(
    private readonly app: FastifyInstance,
    options: { session?: string; from?: string } = {},
  ) {
    if (options.session) this.cookies.set(SESSION_COOKIE, options.session);
    this.from = options.from;
  }

  /** The session cookie, if one is set. */
  get session(): string | undefined {
    return this.cookies.get(SESSION_COOKIE);
  }

  private keep<T extends { cookies: Array<{ name: string; value: string }> }>(answer: T): T {
    for (const c of answer.cookies) this.cookies.set(c.name, c.value);
    return answer;
  }

  private header() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  async get(url: string) {
    return this.keep(await this.app.inject({ url, headers: { cookie: this.header() } }));
  }

  /** Posts the form of the page at `formUrl`, with its CSRF token; a list is a field sent once per item. */
  async post(formUrl: string, url: string, fields: Record<string, string | readonly string[]>) {
    const form = await this.get(formUrl);
    const token = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1];
    assert.ok(token, `${formUrl} carries a CSRF token (${form.statusCode})`);
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        remoteAddress: this.from,
        headers: { cookie: this.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams([...Object.entries(fields).flatMap(([name, v]) => (typeof v === 'string' ? [v] : v).map((item) => [name, item])), ['_csrf', token]]).toString(),
      }),
    );
  }
}
