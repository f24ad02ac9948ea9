// Property tests of the dashboard over HTTP (app.inject), with a signed-in owner and a valid
// CSRF token, against the real service on PostgreSQL and a YouTube fake for platform text:
// - any form posted with random fields (unicode, NUL, lone surrogates, control characters,
//   markup, long values, missing, repeated, non-strings in a JSON body) is never a 5xx; a
//   refusal says why and records nothing;
// - untrusted text (a key name, an invitation's address, an endpoint's URL and description,
//   a video's link, title, creator and description from the platform, a deposit reference,
//   refused values echoed back) never adds a tag or an attribute to a page, and a deposit
//   reference keeps its own cell in billing.csv, kept from reading as a formula;
// - random cookies, CSRF tokens, e-mail/password pairs and Host/Origin/X-Forwarded-Proto are
//   a clear refusal, never a session, and never end someone else's;
// - an invitation link with random passwords: a refusal leaves it usable and signs no one in,
//   an acceptance signs in the member invited.
// Fixed seeds: a CI run repeats what was run here.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { systemClock } from '../../src/clock.ts';
import { YouTubeCollector } from '../../src/collect/collectors/youtube.ts';
import { deposit } from '../../src/commands/account-commands.ts';
import { hashPassword } from '../../src/dashboard/passwords.ts';
import { savePassword } from '../../src/dashboard/reads.ts';
import { SESSION_COOKIE } from '../../src/dashboard/sessions.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/domain/webhooks.ts';
import { signedInOwner } from '../support/dashboard-owner.ts';
import { YouTubeFake } from '../support/fakes/youtube-fake.ts';
import { startTestService, type TestService } from '../support/service.ts';

let service: TestService;
let fake: YouTubeFake;
/** An SMTP server that closes every connection at once: invitation e-mails fail without a wait (the page then gives the link). */
const hangUp = net.createServer((socket) => socket.destroy());

before(async () => {
  await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve));
  const { port } = hangUp.address() as net.AddressInfo;
  fake = await YouTubeFake.start();
  const youtube = new YouTubeCollector({ apiKey: fake.apiKey, baseUrl: fake.baseUrl, clock: systemClock });
  service = await startTestService({
    live: { youtube },
    env: { SMTP_URL: `smtp://127.0.0.1:${port}`, WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_ALLOW_PRIVATE: '1' },
  });
});
after(async () => {
  try {
    await service?.close();
  } finally {
    await fake?.close();
    await new Promise((resolve) => hangUp.close(resolve));
  }
});

// ---------------------------------------------------------------------------------------------
// A browser without one: cookies kept from answer to answer, one CSRF token reused (a token is
// good for as long as the secret cookie it was made from).

class Browser {
  readonly cookies = new Map<string, string>();
  token = '';
  constructor(
    readonly from: string,
    session?: string,
  ) {
    if (session) this.cookies.set(SESSION_COOKIE, session);
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
  keep(answer: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of answer.cookies as Array<{ name: string; value: string }>) this.cookies.set(c.name, c.value);
    return answer;
  }
  async get(url: string): Promise<LightMyRequestResponse> {
    return this.keep(await service.app.inject({ url, remoteAddress: this.from, headers: { cookie: this.header() } }));
  }
  /** Reads the CSRF token of the form on `url`. */
  async tokenFrom(url: string): Promise<void> {
    const page = await this.get(url);
    const token = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1];
    assert.ok(token, `${url} carries a CSRF token (${page.statusCode})`);
    this.token = token;
  }
  async post(url: string, payload: string, contentType = 'application/x-www-form-urlencoded'): Promise<LightMyRequestResponse> {
    return this.keep(await service.app.inject({ method: 'POST', url, remoteAddress: this.from, headers: { cookie: this.header(), 'content-type': contentType }, payload }));
  }
  /** A form as a browser sends it: each field once per value, then the token. */
  postForm(url: string, fields: Record<string, string | readonly string[]>): Promise<LightMyRequestResponse> {
    const pairs = Object.entries(fields).flatMap(([name, v]) => (typeof v === 'string' ? [v] : v).map((item) => [name, item]));
    return this.post(url, new URLSearchParams([...pairs, ['_csrf', this.token]]).toString());
  }
}

/** A readable excerpt of an answer for a failure message. */
const shown = (answer: LightMyRequestResponse) => `${answer.statusCode} ${String(answer.headers['content-type'])} ${answer.body.slice(0, 600)}`;

/** What a refusal says: its error notice, not-found text or expired-form text (a page), or its `error` (JSON). */
function refusalMessage(answer: LightMyRequestResponse): string | null {
  const type = String(answer.headers['content-type']);
  if (type.startsWith('application/json')) {
    const body = answer.json() as { error?: unknown };
    return typeof body.error === 'string' && body.error.length > 0 ? body.error : null;
  }
  if (!type.startsWith('text/html')) return null;
  const said =
    /<p class="notice error" role="alert"><strong>Error: <\/strong>([\s\S]+?)<\/p>/.exec(answer.body)?.[1] ??
    /<p>(There is nothing here, or it belongs to another organization\.)<\/p>/.exec(answer.body)?.[1] ??
    /(This form has expired or did not come from this dashboard\.)/.exec(answer.body)?.[1];
  return said && said.trim().length > 0 ? said : null;
}

// ---------------------------------------------------------------------------------------------
// Random text, with what hand-picked tests pick more often than chance would.

const PIECES = [
  '<script>alert(1)</script>', '<img src=x onerror=alert(1)>', '"', "'", '`', '&', '&amp;', '&#x3c;', '<', '>', '</textarea>', '</title>', '<!--', ']]>',
  '\u0000', '\ud800', '\udfff', '\ud83d\ude00', '\r\n', '\n', '\r', '\t', ' ', '\u00a0', '\u2028', '\u202e', '\ufeff', '\u0301', 'İ', 'ß', '%', '_', '\\', '%00', '%ZZ',
  'javascript:', 'data:', '=cmd', '@', '.', '/', '?', '#', 'a@example.test', 'snapshot.created', 'balance.low', 'live', 'test', 'owner',
  '2020-01-01T00:00', '2020-02-30T00:00', '+01:00', '1', '30', '0', '-1', '1e1', 'https://youtu.be/', 'https://youtu.be/propnothere', 'http://127.0.0.1:9/hook',
  'https://example.invalid/', 'ftp://x', 'http://user:pw@127.0.0.1/',
];
const pieces = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 6 }).map((a) => a.join(''));
/** Any text: any code points (lone surrogates included), pieces of markup and of valid values, or a long run. */
const anyText = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 3, arbitrary: pieces },
  { weight: 2, arbitrary: fc.tuple(pieces, fc.string({ unit: 'binary', maxLength: 10 }), pieces).map((p) => p.join('')) },
  { weight: 1, arbitrary: fc.tuple(fc.oneof(pieces, fc.string({ unit: 'binary', minLength: 1, maxLength: 4 })), fc.integer({ min: 90, max: 3_000 })).map(([s, n]) => s.repeat(Math.ceil(n / s.length)).slice(0, n)) },
);

// ---------------------------------------------------------------------------------------------
// 1. Forms with random fields.

/** A field: missing, sent once, sent several times, or (in a JSON body) any JSON value. */
type FieldValue = { kind: 'missing' } | { kind: 'one'; text: string } | { kind: 'many'; texts: string[] } | { kind: 'json'; value: unknown };

/** Values each form accepts, so that random forms are accepted too, not only refused. */
const PLAUSIBLE: Record<string, fc.Arbitrary<string>> = {
  name: fc.constantFrom('reporting server', 'k', ' padded '),
  mode: fc.constantFrom('live', 'test'),
  links: fc.constantFrom('https://youtu.be/propnothere', 'https://www.youtube.com/watch?v=propnothere\nnot a link', 'https://youtu.be/prop0000abc'),
  days: fc.constantFrom('1', '30', ' 7 ', '07'),
  url: fc.constantFrom('http://127.0.0.1:9/hook', 'https://127.0.0.1/hook?x=1', 'http://127.0.0.1:9/'),
  events: fc.constantFrom(...WEBHOOK_EVENT_TYPES),
  description: fc.constantFrom('', 'orders', ' spaced '),
  email: fc.constantFrom('someone@example.test', 'Someone.Else@Example.TEST', ' x@y.zz '),
  role: fc.constantFrom('owner', 'member'),
  since: fc.constantFrom('2020-01-01T00:00', '2026-02-28T23:59', '2024-02-29T12:00:59.5'),
};
/** A value of the field `name`: a plausible one, one with random text around it, random text, or any of the other shapes. */
function fieldValue(name: string): fc.Arbitrary<FieldValue> {
  const plausible = PLAUSIBLE[name] ?? anyText;
  const text = fc.oneof(
    { weight: 6, arbitrary: plausible },
    { weight: 2, arbitrary: fc.tuple(anyText, plausible, anyText).map(([a, p, b]) => (a.length % 2 ? a + p : p + b)) },
    { weight: 4, arbitrary: anyText },
  );
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: 'missing' as const }) },
    { weight: 7, arbitrary: text.map((t) => ({ kind: 'one' as const, text: t })) },
    { weight: 2, arbitrary: fc.array(text, { minLength: 2, maxLength: 3 }).map((texts) => ({ kind: 'many' as const, texts })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ kind: 'json' as const, value })) },
  );
}

/** How the body travels: as a browser encodes a form, as raw percent-encoded bytes (broken UTF-8 too), or as JSON. */
type Encoding = 'form' | 'raw' | 'json';

function bodyOf(encoding: Encoding, fields: ReadonlyArray<[string, FieldValue]>, token: string, rawBytes: Uint8Array): { payload: string; contentType: string } {
  if (encoding === 'json') {
    const body: Record<string, unknown> = {};
    for (const [name, v] of fields) {
      if (v.kind === 'one') body[name] = v.text;
      else if (v.kind === 'many') body[name] = v.texts;
      else if (v.kind === 'json') body[name] = v.value;
    }
    body._csrf = token;
    return { payload: JSON.stringify(body), contentType: 'application/json' };
  }
  const texts = (v: FieldValue): string[] => (v.kind === 'one' ? [v.text] : v.kind === 'many' ? v.texts : v.kind === 'json' ? [JSON.stringify(v.value) ?? ''] : []);
  if (encoding === 'form') {
    const pairs = fields.flatMap(([name, v]) => texts(v).map((t) => [name, t]));
    return { payload: new URLSearchParams([...pairs, ['_csrf', token]]).toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  // Raw: the first field's value is bytes as they come (overlong, truncated, CESU surrogates...).
  const raw = [...rawBytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
  const rest = fields.slice(1).flatMap(([name, v]) => texts(v).map((t) => `${encodeURIComponent(name)}=${encodeURIComponent(wellFormed(t))}`));
  const first = fields[0] ? [`${encodeURIComponent(fields[0][0])}=${raw}`] : [];
  return { payload: [...first, ...rest, `_csrf=${encodeURIComponent(token)}`].join('&'), contentType: 'application/x-www-form-urlencoded' };
}

/** The text with each lone surrogate as U+FFFD, as a browser encodes it (String#toWellFormed, not in this TypeScript lib). */
const wellFormed = (text: string) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** A path segment: one of the organization's own ids, a random one (any text, percent-encoded), or raw bytes. */
const randomSegment = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }).map((s) => encodeURIComponent(wellFormed(s))),
  // One of the organization's own: a key, the signed-in owner, the endpoint (see ownIds).
  fc.constant('OWN'),
  fc.constantFrom('%00', '%ED%A0%80', '%C0%AE', '..', '.', '%2F', 'wh_', 'key_', 'mem_', 'a'.repeat(150), '%E2%82'),
  fc.uint8Array({ minLength: 1, maxLength: 6 }).map((b) => [...b].map((x) => `%${x.toString(16).padStart(2, '0')}`).join('')),
);

interface FormRoute {
  path: (ids: { endpoint: string; segment: string; key: string; me: string }) => string;
  fields: readonly string[];
  /** A refusal of this form shows it again (its action), with these fields as typed, trimmed (input id → field). */
  again?: { action: (endpoint: string) => string; echo: Record<string, string> };
}
const ROUTES: readonly FormRoute[] = [
  { path: () => '/keys', fields: ['name', 'mode'], again: { action: () => '/keys', echo: { 'key-name': 'name' } } },
  { path: () => '/videos/track', fields: ['links', 'days', 'mode'], again: { action: () => '/videos/track', echo: {} } },
  { path: () => '/webhooks', fields: ['url', 'events', 'description', 'mode'], again: { action: () => '/webhooks', echo: { 'webhook-url': 'url', 'webhook-description': 'description' } } },
  { path: () => '/members', fields: ['email', 'role'], again: { action: () => '/members', echo: { 'invite-email': 'email' } } },
  { path: ({ endpoint }) => `/webhooks/${endpoint}/edit`, fields: ['url', 'events', 'description'], again: { action: (e) => `/webhooks/${e}/edit`, echo: { 'edit-url': 'url', 'edit-description': 'description' } } },
  { path: ({ endpoint }) => `/webhooks/${endpoint}/recover`, fields: ['since'], again: { action: (e) => `/webhooks/${e}/recover`, echo: { 'recover-since': 'since' } } },
  { path: ({ endpoint, segment }) => `/webhooks/${endpoint}/deliveries/${segment}/replay`, fields: [] },
  { path: ({ segment }) => `/webhooks/${segment}/edit`, fields: ['url', 'events', 'description'] },
  { path: ({ segment }) => `/webhooks/${segment}/recover`, fields: ['since'] },
  ...['enable', 'disable', 'test', 'rotate-secret'].map((action): FormRoute => ({ path: ({ segment, endpoint }) => `/webhooks/${segment === 'OWN' ? endpoint : segment}/${action}`, fields: [] })),
  { path: ({ segment }) => `/webhooks/${segment}/delete`, fields: [] },
  { path: ({ segment, key }) => `/keys/${segment === 'OWN' ? key : segment}/delete`, fields: [] },
  { path: ({ segment, me }) => `/members/${segment === 'OWN' ? me : segment}/remove`, fields: [] },
  { path: ({ segment }) => `/videos/${segment}/stop`, fields: [] },
];

const formCase = fc
  .record({
    route: fc.integer({ min: 0, max: ROUTES.length - 1 }),
    values: fc.tuple(...['name', 'mode', 'links', 'days', 'url', 'events', 'description', 'email', 'role', 'since'].map((name) => fieldValue(name).map((v) => [name, v] as const))),
    extra: fc.option(fc.tuple(fc.oneof(fc.string({ unit: 'binary', maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', '_csrf[]', 'events[]')), fieldValue('')), { nil: undefined }),
    encoding: fc.constantFrom<Encoding>('form', 'form', 'raw', 'json'),
    rawBytes: fc.uint8Array({ maxLength: 12 }),
    segment: randomSegment,
  })
  .map((c) => {
    const route = ROUTES[c.route]!;
    const byName = new Map<string, FieldValue>(c.values);
    const fields: Array<[string, FieldValue]> = route.fields.map((name) => [name, byName.get(name)!]);
    if (c.extra) fields.push(c.extra);
    return { route, fields, encoding: c.encoding, rawBytes: c.rawBytes, segment: c.segment };
  });

/** Everything a form could change: the log, and the organization's rows in the read models and the dashboard's tables. */
async function stateOf(orgId: string): Promise<unknown> {
  const q = async (sql: string) => (await service.db.pool.query(sql, [orgId])).rows;
  return {
    events: (await service.db.pool.query(`SELECT count(*)::int AS n FROM es.events`)).rows[0],
    keys: await q(`SELECT key_id, name, mode, revoked FROM rm.api_keys WHERE org_id = $1 ORDER BY key_id`),
    members: await q(`SELECT member_id, email, role, status, invite_hash FROM rm.members WHERE org_id = $1 ORDER BY member_id`),
    endpoints: await q(`SELECT endpoint_id, url, events, description, mode, enabled, sealed_secret FROM rm.webhook_endpoints WHERE org_id = $1 ORDER BY endpoint_id`),
    usage: await q(`SELECT * FROM rm.usage WHERE org_id = $1`),
    videos: await q(`SELECT video_id, status FROM rm.videos WHERE org_id = $1 ORDER BY video_id`),
    credentials: (await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.credentials`)).rows[0],
  };
}

describe('dashboard forms, properties', () => {
  it('any form with random fields: never a 5xx; a refusal says why and changes nothing', async () => {
    const { orgId, memberId, client } = await signedInOwner(service);
    await deposit(service.store, service.clock, orgId, 1_000_000, 'funds');
    await service.settle();
    const browser = new Browser('198.51.100.10', client.session);
    await browser.tokenFrom('/webhooks');
    const made = await browser.postForm('/webhooks', { url: 'http://127.0.0.1:9/fixture', events: 'snapshot.created', mode: 'live' });
    assert.equal(made.statusCode, 303, shown(made));
    const endpoint = ((await service.db.pool.query(`SELECT endpoint_id FROM rm.webhook_endpoints WHERE org_id = $1`, [orgId])).rows[0] as { endpoint_id: string }).endpoint_id;

    await fc.assert(
      fc.asyncProperty(formCase, async ({ route, fields, encoding, rawBytes, segment }) => {
        // The organization's newest key: deleting it (accepted) leaves another for the next run.
        const key = ((await service.db.pool.query(`SELECT key_id FROM rm.api_keys WHERE org_id = $1 AND NOT revoked ORDER BY created_at DESC, key_id LIMIT 1`, [orgId])).rows[0] as { key_id: string } | undefined)?.key_id ?? 'none';
        const url = route.path({ endpoint, segment, key, me: memberId });
        const { payload, contentType } = bodyOf(encoding, fields, browser.token, rawBytes);
        const before = await stateOf(orgId);
        const answer = await browser.post(url, payload, contentType);
        assert.ok(answer.statusCode < 500, `POST ${url}: ${shown(answer)}`);
        if (answer.statusCode === 303) {
          // Accepted: the page it leads to shows the outcome (not a 5xx rendering it).
          const location = String(answer.headers.location);
          assert.match(location, /^\/[^/]/, `POST ${url} redirects within the dashboard: ${location}`);
          const next = await browser.get(location);
          assert.equal(next.statusCode, 200, `GET ${location} after POST ${url}: ${shown(next)}`);
          return;
        }
        // 429: a URL the router refuses (bad percent-encoding) counts against the per-address limit
        // of requests without a key (api/errors.ts frameworkErrors), 100 a minute.
        assert.ok([400, 403, 404, 409, 413, 415, 429].includes(answer.statusCode), `POST ${url}: a refusal status, not ${shown(answer)}`);
        assert.ok(refusalMessage(answer), `POST ${url}: the refusal says why: ${shown(answer)}`);
        assert.deepEqual(await stateOf(orgId), before, `POST ${url} was refused (${answer.statusCode}) and changed nothing`);
        if (route.again && answer.statusCode === 400 && String(answer.headers['content-type']).startsWith('text/html')) {
          // The form again, keeping what was typed (a field sent once as text; anything else is no text).
          assert.ok(answer.body.includes(`action="${route.again.action(endpoint)}"`), `POST ${url}: the refusal shows the form again: ${shown(answer)}`);
          for (const [inputId, field] of Object.entries(route.again.echo)) {
            const sent = fields.find(([name]) => name === field)?.[1];
            const typed = encoding === 'form' && sent?.kind === 'one' ? wellFormed(sent.text).trim() : encoding === 'json' && sent?.kind === 'one' ? sent.text.trim() : null;
            if (typed === null) continue;
            const value = new RegExp(`<input id="${inputId}"[^>]*? value="([^"]*)"`).exec(answer.body)?.[1];
            assert.equal(value === undefined ? undefined : unescapeHtml(value), typed, `POST ${url}: the form keeps ${field} as typed`);
          }
        }
      }),
      { seed: 42, numRuns: 250, includeErrorInReport: true },
    );
    // The session still works, the token still good: nothing above broke either.
    assert.equal((await browser.get('/keys')).statusCode, 200);
  });
});

// ---------------------------------------------------------------------------------------------
// 2. Untrusted text on pages.

/**
 * A page's markup as a browser's tokenizer reads it: each start or end tag with its attribute
 * names, comments and doctypes; text and attribute values left out. The insides of script,
 * style, title and textarea are text to a browser, so they are skipped as it skips them. Also
 * the values of the attributes that name an address (href, src, action), decoded.
 */
function markupOf(page: string): { tags: string[]; urls: string[] } {
  const tags: string[] = [];
  const urls: string[] = [];
  let i = 0;
  while (i < page.length) {
    const lt = page.indexOf('<', i);
    if (lt < 0) break;
    if (page.startsWith('<!--', lt)) {
      const end = page.indexOf('-->', lt + 4);
      tags.push('<!---->');
      i = end < 0 ? page.length : end + 3;
      continue;
    }
    if (page[lt + 1] === '!' || page[lt + 1] === '?') {
      const end = page.indexOf('>', lt);
      tags.push(`<!${page.slice(lt + 2, end < 0 ? page.length : end).toLowerCase()}>`);
      i = end < 0 ? page.length : end + 1;
      continue;
    }
    const open = /^<(\/?)([a-zA-Z][^\t\n\f\r />]*)/.exec(page.slice(lt, lt + 200));
    if (!open) {
      i = lt + 1;
      continue;
    }
    let j = lt + open[0].length;
    const attributes: string[] = [];
    for (;;) {
      while (j < page.length && /[\t\n\f\r /]/.test(page[j]!)) j++;
      if (j >= page.length || page[j] === '>') break;
      const name = /^[^\t\n\f\r />][^\t\n\f\r />=]*/.exec(page.slice(j, j + 200))![0];
      j += name.length;
      while (j < page.length && /[\t\n\f\r ]/.test(page[j]!)) j++;
      let value = '';
      if (page[j] === '=') {
        j++;
        while (j < page.length && /[\t\n\f\r ]/.test(page[j]!)) j++;
        const quote = page[j];
        if (quote === '"' || quote === "'") {
          const end = page.indexOf(quote, j + 1);
          value = page.slice(j + 1, end < 0 ? page.length : end);
          j = end < 0 ? page.length : end + 1;
        } else {
          const m = /^[^\t\n\f\r >]*/.exec(page.slice(j))![0];
          value = m;
          j += m.length;
        }
      }
      attributes.push(name.toLowerCase());
      if (['href', 'src', 'action', 'formaction'].includes(name.toLowerCase())) urls.push(unescapeHtml(value));
    }
    const tag = open[2]!.toLowerCase();
    tags.push(`<${open[1]}${tag}${attributes.length > 0 ? ` ${attributes.join(' ')}` : ''}>`);
    i = j + 1;
    if (!open[1] && ['script', 'style', 'title', 'textarea'].includes(tag)) {
      // Case-insensitive, on the page as it is (lower-casing it could move every index after an İ).
      const close = new RegExp(`</${tag}`, 'gi');
      close.lastIndex = i;
      i = close.exec(page)?.index ?? page.length;
    }
  }
  return { tags, urls };
}

function unescapeHtml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
}

/** The first place two pages' markup differ, readably. */
function markupDifference(name: string, actual: string[], expected: string[]): string | null {
  const n = Math.max(actual.length, expected.length);
  for (let k = 0; k < n; k++) {
    if (actual[k] !== expected[k]) {
      return `${name}: markup differs from the page with harmless text at tag ${k}: got ${JSON.stringify(actual.slice(Math.max(0, k - 2), k + 3))}, expected ${JSON.stringify(expected.slice(Math.max(0, k - 2), k + 3))}`;
    }
  }
  return null;
}

/** What a form can carry of a text: a browser sends lone surrogates as U+FFFD, and NUL is refused (property 1's business). */
const formable = (text: string) => wellFormed(text).replace(/\u0000/g, '');
/** At most `n` code points. */
const codePoints = (text: string, n: number) => Array.from(text).slice(0, n).join('');

/** RFC 4180: cells separated by commas, rows by CRLF, quoted cells with "" for a quote. */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      (row = []), (cell = ''), i++;
    } else cell += c;
  }
  assert.ok(!quoted && row.length === 0 && cell === '', `the CSV ends with a complete row: ${JSON.stringify(text.slice(-80))}`);
  return rows;
}

let videoSerial = 0;

/**
 * A new organization with `text` everywhere untrusted text reaches a page, and those pages:
 * each form's refusal that puts typed text back, the pages that show what was made, the
 * platform's title, creator and description of a tracked video, a deposit reference.
 */
async function pagesShowing(text: string): Promise<Record<string, string>> {
  const typed = codePoints(formable(text), 40);
  const { orgId, client } = await signedInOwner(service);
  await deposit(service.store, service.clock, orgId, 5_000_000, `r${typed}`);
  // As the operator typed it, a formula's first character included (billing.csv keeps it from reading as one).
  const reference = codePoints(formable(text), 60);
  await deposit(service.store, service.clock, orgId, 1_000_000, reference);
  await service.settle();
  const serial = ++videoSerial;
  const b = new Browser(`203.0.113.${serial % 250}`, client.session);
  await b.tokenFrom('/keys');
  const pages: Record<string, string> = {};
  const page = async (name: string, answer: LightMyRequestResponse, status: number) => {
    assert.equal(answer.statusCode, status, `${name}: ${shown(answer)}`);
    pages[name] = answer.body;
  };
  const accepted = (what: string, answer: LightMyRequestResponse) => assert.equal(answer.statusCode, 303, `${what}: ${shown(answer)}`);

  // Listed first (keys are newest first): a second later on the log's clock than the organization's own.
  service.clock.advance(1_000);
  accepted('a key named with the text', await b.postForm('/keys', { name: `k${typed}`, mode: 'live' }));
  await page('/keys with the key created', await b.get('/keys'), 200);
  await page('/keys refused', await b.postForm('/keys', { name: `k${typed}` }), 400);
  const apiKey = /data-testid="new-key-value"[^>]*>([^<]+)</.exec(pages['/keys with the key created']!)?.[1];
  assert.ok(apiKey, 'the new key is shown once');

  const id = `prop${String(serial).padStart(7, '0')}`;
  fake.videos.set(id, { title: `t${text}`, channelTitle: `c${text}`, description: `d${text}`, statistics: { viewCount: '100', likeCount: '10', commentCount: '1' } });
  const link = `https://youtu.be/${id}?x=${typed.replace(/[\s\\\u0000-\u001f\u007f]/g, '')}`;
  accepted('a video tracked', await b.postForm('/videos/track', { links: link, days: '1', mode: 'live' }));
  await page('/videos with the tracking results', await b.get('/videos'), 200);
  const video = (await service.db.pool.query(`SELECT video_id, current_metadata->>'title' AS title FROM rm.videos WHERE org_id = $1`, [orgId])).rows[0] as { video_id: string; title: string };
  await page('/videos/{id}', await b.get(`/videos/${video.video_id}`), 200);
  await page('/videos searched by title', await b.get(`/videos?q=${encodeURIComponent(codePoints(video.title, 60))}`), 200);
  // Tracked with the key made above: /keys lists it under that key, by its title.
  const keyed = `prok${String(serial).padStart(7, '0')}`;
  fake.videos.set(keyed, { title: `t${text}`, channelTitle: `c${text}`, description: `d${text}`, statistics: { viewCount: '100', likeCount: '10', commentCount: '1' } });
  const tracked = await service.app.inject({ method: 'POST', url: '/api/v1/videos/track', headers: { 'x-api-key': apiKey }, payload: { video_link: `https://youtu.be/${keyed}`, duration_days: 1 } });
  assert.equal(tracked.statusCode, 201, tracked.body);
  await page('/keys with a video', await b.get('/keys'), 200);
  await page('/videos/track refused', await b.postForm('/videos/track', { links: `l${typed}`, days: '0', mode: 'live' }), 400);

  accepted('an endpoint', await b.postForm('/webhooks', { url: `http://127.0.0.1:9/h?q=${typed.replace(/#/g, '')}`, events: 'snapshot.created', description: `w${typed}`, mode: 'live' }));
  await page('/webhooks with the endpoint added', await b.get('/webhooks'), 200);
  const endpoint = ((await service.db.pool.query(`SELECT endpoint_id FROM rm.webhook_endpoints WHERE org_id = $1`, [orgId])).rows[0] as { endpoint_id: string }).endpoint_id;
  await page('/webhooks/{id}', await b.get(`/webhooks/${endpoint}`), 200);
  await page('/webhooks refused', await b.postForm('/webhooks', { url: 'http://127.0.0.1:9/ok', events: `e${typed}`, description: `w${typed}`, mode: 'live' }), 400);
  await page('/webhooks/{id}/edit refused', await b.postForm(`/webhooks/${endpoint}/edit`, { url: `u${typed}`, events: 'snapshot.created', description: `w${typed}` }), 400);

  await page('/members refused', await b.postForm('/members', { email: `e<${typed}`, role: 'member' }), 400);
  // Listed after the owner (members are in the order invited): a second later on the log's clock.
  service.clock.advance(1_000);
  let local = '';
  for (const c of typed) if (!/[\s@<>()[\]\\,;:"]/.test(c) && local.length + c.length <= 20) local += c;
  accepted('an invitation', await b.postForm('/members', { email: `m${local}@example.test`, role: 'member' }));
  await page('/members with the invitation', await b.get('/members'), 200);
  const inviteLink = /<code class="wrap">([^<]+)<\/code>/.exec(pages['/members with the invitation']!)?.[1];
  assert.ok(inviteLink, 'the members page gives the invitation link');
  await page('/invite/{token}', await new Browser('203.0.113.251').get(new URL(unescapeHtml(inviteLink)).pathname), 200);

  const visitor = new Browser(`198.18.${serial % 250}.1`);
  await visitor.tokenFrom('/login');
  await page('/login refused', await visitor.postForm('/login', { email: `e<${typed}`, password: 'x' }), 400);

  await page('/billing', await b.get('/billing'), 200);
  // The ledger as CSV: each reference in its own cell, as typed, a formula's first character
  // behind a quote mark.
  const csv = await b.get('/billing.csv');
  assert.equal(csv.statusCode, 200, shown(csv));
  const rows = csvRows(csv.body);
  assert.deepEqual(rows[0], ['time', 'kind', 'amount_usd', 'snapshots', 'reference']);
  const references = rows.slice(1).filter((r) => r[1] === 'deposit').map((r) => r[4]);
  const asShown = (r: string) => (/^[=+\-@\t\r]/.test(r) ? `'${r}` : r);
  assert.deepEqual(references, [asShown(`r${typed}`), asShown(reference)], `billing.csv: ${JSON.stringify(csv.body)}`);
  for (const row of rows) assert.equal(row.length, 5, `billing.csv: a row of 5 cells: ${JSON.stringify(row)}`);
  return pages;
}

describe('dashboard pages, properties', () => {
  it('untrusted text never adds a tag or an attribute to a page', async () => {
    const harmless = Object.fromEntries(Object.entries(await pagesShowing('x')).map(([name, body]) => [name, markupOf(body).tags]));
    await fc.assert(
      fc.asyncProperty(anyText, async (text) => {
        for (const [name, body] of Object.entries(await pagesShowing(text))) {
          const { tags, urls } = markupOf(body);
          const differs = markupDifference(name, tags, harmless[name]!);
          assert.equal(differs, null, differs ?? '');
          for (const url of urls) assert.match(url, /^(\/(?!\/)|#|https:\/\/)/, `${name}: an address attribute holds ${JSON.stringify(url)}`);
        }
      }),
      { seed: 42, numRuns: 20, includeErrorInReport: true },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// 3. Sign-in and sessions.

const cookieText = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).filter((c) => c !== 0x3b && c !== 0x2c).map((c) => String.fromCharCode(c)), maxLength: 120 }),
  fc.constantFrom('', '%', '%ZZ', '%ED%A0%80', '"', '""', 'a'.repeat(100), 'a'.repeat(101), 's:abc.def', 'j:{}'),
);

describe('dashboard sign-in, properties', () => {
  it('random cookies, CSRF tokens and e-mail/password pairs: a clear refusal, never a session, never another one ended', async () => {
    const { orgId, memberId, client } = await signedInOwner(service);
    const email = `owner-${orgId}@example.test`;
    const password = 'the right password, never sent';
    await savePassword(service.db.pool, memberId, await hashPassword(password));
    const owner = new Browser('198.51.100.30', client.session);
    const liveSessions = async () => ((await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.sessions WHERE ended_at IS NULL`)).rows[0] as { n: number }).n;

    const attempt = fc.record({
      ip: fc.ipV4(),
      session: fc.option(cookieText, { nil: undefined }),
      secret: fc.oneof(fc.constant<'real'>('real'), fc.constant<'none'>('none'), cookieText),
      token: fc.oneof(fc.constant<'real'>('real'), fc.constant<'none'>('none'), anyText),
      email: fc.oneof(fc.constant(email), fc.constant(` ${email.toUpperCase()} `), anyText, fc.tuple(anyText, anyText).map(([a, b]) => `${a}@${b}.test`)),
      password: anyText.filter((p) => p !== password),
      json: fc.boolean(),
      /** What the request says of where the browser is (plain http or not decides the page's words, never a session). */
      headers: fc.record(
        {
          host: fc.oneof(cookieText, fc.constantFrom('localhost', '127.0.0.1:3000', '[::1]:8080', 'dashboard.example', '[', ':', 'a:b:c', '[::1')),
          origin: fc.oneof(cookieText, fc.constantFrom('http://dashboard.example', 'https://x', 'null', 'http://[::1', 'file://')),
          'x-forwarded-proto': fc.oneof(cookieText, fc.constantFrom('http', 'https', 'HTTP, https', ',', ' ')),
        },
        { requiredKeys: [] },
      ),
    });
    await fc.assert(
      fc.asyncProperty(attempt, async (a) => {
        const b = new Browser(a.ip);
        await b.tokenFrom('/login');
        const realToken = b.token;
        if (a.secret === 'none') b.cookies.delete('_csrf');
        else if (a.secret !== 'real') b.cookies.set('_csrf', a.secret);
        if (a.session !== undefined) b.cookies.set(SESSION_COOKIE, a.session);
        const token = a.token === 'real' ? realToken : a.token === 'none' ? undefined : a.token;
        const sessionsBefore = await liveSessions();

        const home = await b.get('/');
        assert.equal(home.statusCode, 303, `GET / with cookies ${b.header()}: ${shown(home)}`);
        assert.equal(home.headers.location, '/login');

        const fields = { email: a.email, password: a.password, ...(token === undefined ? {} : { _csrf: token }) };
        const payload = a.json ? JSON.stringify(fields) : new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, wellFormed(v)])).toString();
        const answer = b.keep(
          await service.app.inject({
            method: 'POST',
            url: '/login',
            remoteAddress: b.from,
            headers: { ...a.headers, cookie: b.header(), 'content-type': a.json ? 'application/json' : 'application/x-www-form-urlencoded' },
            payload,
          }),
        );
        assert.ok([400, 401, 403, 429].includes(answer.statusCode), `POST /login: a refusal, not ${shown(answer)}`);
        assert.ok(refusalMessage(answer) ?? /<p class="notice error"|Too many attempts/.test(answer.body), `POST /login: the refusal says why: ${shown(answer)}`);
        const session = (answer.cookies as Array<{ name: string; value: string }>).find((c) => c.name === SESSION_COOKIE);
        assert.ok(!session || session.value === '', `POST /login set a session cookie: ${shown(answer)}`);
        assert.equal(await liveSessions(), sessionsBefore, 'no session started');

        // A sign-out with these cookies ends no one else's session.
        const out = await b.post('/logout', token === undefined ? '' : new URLSearchParams({ _csrf: wellFormed(token) }).toString());
        assert.ok(out.statusCode === 303 || out.statusCode === 403 || out.statusCode === 400, `POST /logout: ${shown(out)}`);
        const still = await owner.get('/keys');
        assert.equal(still.statusCode, 200, `the owner is still signed in after a sign-out with ${b.header()}`);
      }),
      { seed: 42, numRuns: 40, includeErrorInReport: true },
    );
  });
});

describe('dashboard invitations, properties', () => {
  it('an invitation link with random passwords: never a 5xx; a refusal leaves the link usable and signs no one in, an acceptance signs in that member only', async () => {
    const { client } = await signedInOwner(service);
    const owner = new Browser('198.51.100.40', client.session);
    await owner.tokenFrom('/members');
    let invited = 0;
    /** A new invitation of the organization: its link's path and its address. */
    async function invite(): Promise<{ path: string; email: string }> {
      const email = `invitee-${++invited}@example.test`;
      const answer = await owner.postForm('/members', { email, role: 'member' });
      assert.equal(answer.statusCode, 303, shown(answer));
      const link = /<code class="wrap">([^<]+)<\/code>/.exec((await owner.get('/members')).body)?.[1];
      assert.ok(link, 'the members page gives the invitation link');
      return { path: new URL(unescapeHtml(link)).pathname, email };
    }
    const credentials = async () => ((await service.db.pool.query(`SELECT count(*)::int AS n FROM dashboard.credentials`)).rows[0] as { n: number }).n;
    let current = await invite();

    const goodPassword = fc.string({ unit: 'binary', minLength: 12, maxLength: 40 }).map(formable).filter((p) => p.length >= 12);
    const acceptance = fc.record({
      password: fc.oneof(goodPassword, anyText),
      confirm: fc.oneof(fc.constant<'same'>('same'), anyText),
      token: fc.oneof({ weight: 4, arbitrary: fc.constant<'real'>('real') }, { weight: 1, arbitrary: randomSegment }),
      json: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(acceptance, async (a) => {
        const path = a.token === 'real' ? current.path : `/invite/${a.token}`;
        const b = new Browser(`192.0.2.${(invited % 200) + 1}`);
        await b.tokenFrom('/login');
        const fields = { password: a.password, confirm: a.confirm === 'same' ? a.password : a.confirm, _csrf: b.token };
        const before = await credentials();
        const answer = a.json
          ? await b.post(path, JSON.stringify(fields), 'application/json')
          : await b.post(path, new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, wellFormed(v)])).toString());
        assert.ok(answer.statusCode < 500, `POST ${path}: ${shown(answer)}`);
        if (answer.statusCode === 303) {
          assert.equal(a.token, 'real', `a made-up link was accepted: ${path}`);
          assert.equal(answer.headers.location, '/');
          assert.ok(b.cookies.get(SESSION_COOKIE), 'an acceptance signs the member in');
          const home = await b.get('/');
          assert.equal(home.statusCode, 200, shown(home));
          assert.ok(home.body.includes(`<span class="who">${current.email}</span>`), 'signed in as the member invited');
          assert.equal((await new Browser('192.0.2.250').get(current.path)).statusCode, 410, 'the link works once');
          current = await invite();
          return;
        }
        assert.ok([400, 403, 404, 410, 429].includes(answer.statusCode), `POST ${path}: a refusal, not ${shown(answer)}`);
        assert.ok(refusalMessage(answer), `POST ${path}: the refusal says why: ${shown(answer)}`);
        assert.ok(!b.cookies.get(SESSION_COOKIE), `a refusal set a session cookie: ${shown(answer)}`);
        assert.equal(await credentials(), before, 'a refusal saves no password');
        const again = await new Browser('192.0.2.251').get(current.path);
        assert.equal(again.statusCode, 200, `the link still works after a refusal: ${shown(again)}`);
      }),
      { seed: 42, numRuns: 20, includeErrorInReport: true },
    );
  });
});
