// Property tests of the public API under /api/v1 (fast-check, fixed seeds, so CI repeats what
// was run): random requests at every operation of the served OpenAPI document (never a 5xx but
// the track's own 500/502; status, media type, body and error message as documented; a refused
// request writes nothing and changes nothing shown), cursor walks over random sets of videos,
// and random webhook endpoints and alerts read back as answered. The hand-picked hostile inputs
// are in garbage.test.ts, unstorable-input.test.ts, malformed-http.test.ts and cursor.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { PLATFORMS, type Platform } from '../../src/domain/platform.ts';
import { isForbiddenAddress } from '../../src/notify/webhooks/address-guard.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { API, expectStatus, ISO_TIME, linkOf, newLink, platformId, type Response } from './helpers.ts';

let service: TestService;
let doc: Record<string, any>;
before(async () => {
  service = await startTestService();
  const served = await service.app.inject({ method: 'GET', url: `${API}/openapi.json` });
  assert.equal(served.statusCode, 200, served.body);
  doc = served.json();
});
after(() => service.close());

// ---- the served document ----------------------------------------------------------------

/** The schema with every local `$ref` replaced by what it points to. */
function deref(node: unknown): any {
  if (Array.isArray(node)) return node.map(deref);
  if (!node || typeof node !== 'object') return node;
  const object = node as Record<string, unknown>;
  if (typeof object.$ref === 'string') {
    const target = object.$ref.replace(/^#\//, '').split('/').reduce<any>((at, part) => at?.[part], doc);
    assert.ok(target, `unresolved $ref ${object.$ref}`);
    return deref(target);
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, deref(v)]));
}

interface Operation {
  [fc.toStringMethod]: () => string;
  method: string;
  path: string;
  query: string[];
  body: any | null;
  /** Per status: its media type, its body's validator, and the error messages the document gives it. */
  responses: Map<number, { type: string; valid: (body: unknown) => boolean; errors: () => string; messages: Set<string> }>;
}

const ajv = new Ajv({ strict: false, allErrors: true });
ajv.addFormat('date-time', { type: 'string', validate: (text: string) => ISO_TIME.test(text) && !Number.isNaN(Date.parse(text)) });

/** The messages a response's documentation names: its example's `error`, and every `quoted` phrase of its description. */
function messagesOf(response: Record<string, any>, content: Record<string, any>): Set<string> {
  const messages = new Set<string>();
  const example = content.example ?? content.schema?.examples?.[0];
  if (example && typeof example.error === 'string') messages.add(example.error);
  for (const match of String(response.description ?? '').matchAll(/`([^`]+)`/g)) messages.add(match[1]!);
  return messages;
}

function operations(): Operation[] {
  const found: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, raw] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const op = deref(raw);
      const responses: Operation['responses'] = new Map();
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        const [type, content] = Object.entries(response.content ?? {})[0] as [string, Record<string, any>];
        const validate = ajv.compile(content.schema);
        responses.set(Number(status), {
          type,
          valid: (body) => validate(body) as boolean,
          errors: () => ajv.errorsText(validate.errors),
          messages: messagesOf(response, content),
        });
      }
      found.push({
        // How fast-check shows it in a counterexample.
        [fc.toStringMethod]: () => `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        query: (op.parameters ?? []).filter((p: any) => p.in === 'query').map((p: any) => p.name),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        responses,
      });
    }
  }
  return found;
}

// ---- random text --------------------------------------------------------------------------

/** A lone UTF-16 surrogate, NUL, URL punctuation, or any code point. */
const nastyChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
  { weight: 2, arbitrary: fc.constantFrom('\u0000', '%', '/', '?', '#', '&', '=', '+', '.', ' ', '\n', '[', ']', '\\', '"', '\u202e', '\ufeff', '😀') },
);
const nastyString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: nastyChar, maxLength: 12 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '.', '..', 'all', 'null', 'true', '-0', 'NaN', 'Infinity', '1e309', '__proto__', 'constructor', 'x'.repeat(300), 'x'.repeat(1001)) },
  { weight: 2, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n })).map(String) },
);

/** Percent-encoding of any string, lone surrogates too (as the three bytes a CESU-8 encoder writes, which no UTF-8 decoder takes). */
function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.charCodeAt(0);
    if (char.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(char);
  }
  return out;
}

/** Any JSON value, with nasty strings in it. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: nastyString },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, 2 ** 63, 1e308, -0, [], {}, [1], { a: 1 }) },
);

// ---- values shaped by the document's schemas ------------------------------------------------

/** Public addresses, so no name needs to resolve (there is no DNS here), and some forbidden ones. */
const ipHost = fc.oneof(
  { weight: 4, arbitrary: fc.ipV4().filter((ip) => !isForbiddenAddress(ip)) },
  { weight: 1, arbitrary: fc.constantFrom('127.0.0.1', '10.0.0.1', '169.254.169.254', '[::1]', '[2606:4700::1111]', '0x7f.1', '1.2.3', '4294967295') },
);
/** Text of a URL's path or query: any printable character, and URL punctuation. */
const urlChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom('%', '%41', '%zz', '?', '#', '&', '=', '+', '.', '..', ' ', '\\', '[', ']', '@', ':', '\t') },
);
const urlText = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('https', 'https', 'https', 'https', 'https', 'http', 'HTTPS', 'ftp'), ipHost, fc.option(fc.integer({ min: 1, max: 65535 })), fc.string({ unit: urlChar, maxLength: 20 }), fc.option(fc.string({ unit: urlChar, maxLength: 10 }))).map(
    ([scheme, host, port, path, query]) => `${scheme}://${host}${port === null ? '' : `:${port}`}/${path}${query === null ? '' : `?${query}`}`,
  ) },
  // Long ones, around the limit as sent and as stored (percent-encoded).
  { weight: 1, arbitrary: fc.tuple(ipHost, fc.constantFrom('é', '😀', '%', ' ', 'a'), fc.integer({ min: 300, max: 2040 })).map(([host, c, n]) => `https://${host}/${c.repeat(Math.max(0, n - host.length))}`) },
);
const linkText = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...PLATFORMS), fc.constantFrom('', '', '', '404', '500', '503')).map(([platform, ending]) => newLink(platform, ending)) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PLATFORMS), fc.string({ unit: urlChar, maxLength: 15 })).map(([platform, id]) => linkOf(platform, id)) },
);
const isoText = fc.oneof(
  fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), fc.constantFrom('Z', '+00:00', '-23:59', '+14:00', '+99:99', ''), fc.constantFrom('', ':00', ':59.999999', ':60')).map(
    ([y, mo, d, zone, seconds]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T12:00${seconds}${zone}`,
  ),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

/**
 * Where path ids come from: the organization's own live resources (most often: the key is
 * mostly its live one), its test-mode ones and the other organization's, or anything.
 */
const pools: Record<string, string[]> = { videos: [], webhooks: [], alerts: [], deliveries: [], 'videos-elsewhere': [], 'webhooks-elsewhere': [], 'alerts-elsewhere': [] };
type Id = { pool: string; index: number } | { raw: string };
const idOf = (pool: string): fc.Arbitrary<Id> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.nat().map((index) => ({ pool, index })) },
    { weight: 1, arbitrary: fc.nat().map((index) => ({ pool: pools[`${pool}-elsewhere`] ? `${pool}-elsewhere` : pool, index })) },
    { weight: 2, arbitrary: nastyString.map((raw) => ({ raw })) },
  );
const resolveId = (id: Id) => ('raw' in id ? id.raw : pools[id.pool]![id.index % Math.max(1, pools[id.pool]!.length)] ?? 'none');

/** A value the schema allows (mostly); some fields by name, where the schema says only "string". */
function shaped(schema: any, name = ''): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s: any) => shaped(s, name)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const base = ((): fc.Arbitrary<unknown> => {
    switch (schema.type) {
      case 'object': {
        const props = Object.entries(schema.properties ?? {}) as Array<[string, any]>;
        return fc.record(Object.fromEntries(props.map(([key, s]) => [key, shaped(s, key)])), { requiredKeys: schema.required ?? [] });
      }
      case 'array':
        return fc.array(shaped(schema.items, name), { minLength: schema.minItems ?? 0, maxLength: schema.maxItems ?? 5 });
      case 'integer':
        return fc.oneof(
          { weight: 3, arbitrary: fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 2 ** 40 }) },
          { weight: 1, arbitrary: fc.constantFrom(schema.minimum ?? 0, schema.maximum ?? Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21) },
        );
      case 'number':
        return fc.oneof(fc.double({ min: schema.minimum ?? -1e9, max: 1e12, noNaN: true }), fc.constantFrom(0, 0.5, 12.5, 1e-7, 123456789.123456, 1e21));
      case 'boolean':
        return fc.boolean();
      case 'string':
        if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
        if (name === 'url') return urlText;
        if (name === 'video_link') return linkText;
        if (name === 'since') return isoText;
        if (name === 'video_id') return fc.oneof(fc.constant('all'), idOf('videos').map(resolveLater));
        return fc.oneof(
          { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
          { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
          { weight: 1, arbitrary: nastyString },
        );
      default:
        return anyJson;
    }
  })();
  return schema.nullable ? fc.option(base) : base;
}

/** An id to be resolved when the request is sent (pools change as resources are made and deleted). */
const LATER = Symbol('id');
const resolveLater = (id: Id) => ({ [LATER]: id, toJSON: () => resolveId(id) });

/** The value with one field, at any depth, replaced by any value. */
function mutated(value: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.tuple(value, fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), anyJson).map(([base, path, replacement]) => {
    const copy = structuredCloneSafe(base);
    let at: any = copy;
    for (let i = 0; i < path.length; i++) {
      if (!at || typeof at !== 'object') break;
      const keys = Object.keys(at);
      const key = keys.length === 0 ? 'extra' : keys[path[i]! % keys.length]!;
      if (i === path.length - 1 || !at[key] || typeof at[key] !== 'object') {
        at[key] = replacement;
        break;
      }
      at = at[key];
    }
    return copy === null || typeof copy !== 'object' ? replacement : copy;
  });
}

/** A deep copy that keeps ids to be resolved later as they are. */
function structuredCloneSafe(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(structuredCloneSafe);
  if (value && typeof value === 'object' && !(LATER in value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, structuredCloneSafe(v)]));
  return value;
}

// ---- requests -------------------------------------------------------------------------------

interface Request {
  op: Operation;
  ids: Id[];
  query: Array<[string, string]>;
  body: { value: unknown } | null;
  key: 'live' | 'test';
}

function poolOfParam(path: string, param: string): string {
  if (param === 'delivery_id') return 'deliveries';
  return path.startsWith('/webhooks') ? 'webhooks' : path.startsWith('/alerts') ? 'alerts' : 'videos';
}

function requestOf(op: Operation): fc.Arbitrary<Request> {
  const params = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const queryName = fc.oneof(
    { weight: 4, arbitrary: op.query.length > 0 ? fc.constantFrom(...op.query) : fc.constant('limit') },
    { weight: 1, arbitrary: fc.constantFrom('limit[]', 'cursor[x]', '__proto__', 'x', 'offset', '') },
  );
  const queryValue = fc.oneof(
    { weight: 2, arbitrary: nastyString.map(percentEncode) },
    { weight: 1, arbitrary: fc.constantFrom('youtube', 'tiktok', 'monitoring', 'completed', '1', '100', '101', '0', '-1', '1.5', '99999999999999999999', '', '%', '%zz', '%00') },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }).map((v) => Buffer.from(JSON.stringify(v) ?? '').toString('base64url')) },
  );
  const body: fc.Arbitrary<{ value: unknown } | null> = op.body
    ? fc.oneof(
        { weight: 3, arbitrary: shaped(op.body).map((value) => ({ value })) },
        { weight: 3, arbitrary: mutated(shaped(op.body)).map((value) => ({ value })) },
        { weight: 1, arbitrary: anyJson.map((value) => ({ value })) },
        { weight: 1, arbitrary: fc.constant(null) },
      )
    : fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: anyJson.map((value) => ({ value })) });
  return fc.record({
    op: fc.constant(op),
    ids: fc.tuple(...params.map((p) => idOf(poolOfParam(op.path, p)))),
    query: fc.array(fc.tuple(queryName, queryValue), { maxLength: op.query.length > 0 ? 3 : 1 }),
    body,
    key: fc.constantFrom<'live' | 'test'>('live', 'live', 'live', 'test'),
  });
}

interface Sent {
  method: string;
  url: string;
  payload?: string;
}

function materialize(request: Request): Sent {
  let index = 0;
  const path = request.op.path.replace(/\{\w+\}/g, () => {
    const id = request.ids[index++]!;
    return 'raw' in id ? percentEncode(id.raw) : encodeURIComponent(resolveId(id));
  });
  const query = request.query.map(([name, value]) => `${encodeURIComponent(name)}=${value}`).join('&');
  // JSON.stringify writes a lone surrogate as its \u escape, as a client's JSON would carry it.
  const payload = request.body ? JSON.stringify(request.body.value) : undefined;
  return { method: request.op.method, url: `${API}${path}${query ? `?${query}` : ''}`, ...(payload === undefined ? {} : { payload }) };
}

const shortText = (text: string, max = 300) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text);
const describeSent = (sent: Sent, response: Response) =>
  `${sent.method} ${shortText(sent.url)}${sent.payload === undefined ? '' : ` body ${shortText(sent.payload)}`}\n  -> ${response.statusCode} ${response.headers['content-type']} ${shortText(response.body)}`;

/** What the document says about the answer: its status, media type, body shape and error message. */
function checkAgainstDocument(op: Operation, sent: Sent, response: Response): void {
  const what = describeSent(sent, response);
  const status = response.statusCode;
  const type = String(response.headers['content-type'] ?? '');
  // The spec's platform-caused 500 and 502 exist only at track; any other 5xx is a defect.
  assert.ok(status < 500 || (op.path === '/videos/track' && (status === 500 || status === 502)), `a server error:\n${what}`);
  // An id segment left empty, or a dot segment (RFC 3986: `/webhooks/..` is `/`), names another
  // path: the API's own 404 `Not found` for paths it does not have.
  const segments = sent.url.split('?')[0]!.split('/').slice(1);
  if (status === 404 && response.json().error === 'Not found' && segments.some((s) => s === '' || s === '.' || s === '..')) return;
  const documented = op.responses.get(status);
  assert.ok(documented, `status ${status} is not documented for ${op.method} ${op.path}:\n${what}`);
  assert.ok(type.startsWith(documented.type), `content-type ${type}, the document says ${documented.type}:\n${what}`);
  const body = documented.type === 'application/json' ? response.json() : response.body;
  assert.ok(documented.valid(body), `the body does not match the document's schema (${documented.errors()}):\n${what}`);
  if (status >= 400) {
    assert.ok(documented.messages.has(body.error), `error ${JSON.stringify(body.error)} is none of the document's for ${status} (${[...documented.messages].join(' | ')}):\n${what}`);
    if (body.error === 'Invalid request') {
      assert.ok(Array.isArray(body.details) && body.details.length > 0, `Invalid request without details:\n${what}`);
      for (const detail of body.details) assert.deepEqual(Object.keys(detail).sort(), ['field', 'message'], what);
    }
  }
}

// ---- the organizations ------------------------------------------------------------------------

interface Org {
  orgId: string;
  liveKey: string;
  testKey: string;
}
let own: Org;
let other: Org;

async function inject(key: string, method: string, url: string, payload?: unknown): Promise<Response> {
  return service.app.inject({ method: method as 'GET', url: API + url, headers: { 'x-api-key': key }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

/** Everything the API shows of an organization, both modes: what a refused request must leave as it was. */
async function stateOf(org: Org): Promise<unknown> {
  const state: Record<string, unknown> = {};
  for (const [mode, key] of [['live', org.liveKey], ['test', org.testKey]] as const) {
    for (const path of ['/usage', '/videos?limit=100', '/webhooks', '/alerts']) state[`${mode} ${path}`] = expectStatus(await inject(key, 'GET', path), 200);
  }
  return state;
}

const ENDPOINT_URL = 'https://93.184.215.14/hooks';

/** Videos, endpoints (one disabled) and alerts of each mode, whose ids go into the pools. */
async function furnish(org: Org): Promise<void> {
  for (const key of [org.liveKey, org.testKey]) {
    const video = expectStatus(await inject(key, 'POST', '/videos/track', { video_link: newLink(), duration_days: 2 }), 201);
    const stopped = expectStatus(await inject(key, 'POST', '/videos/track', { video_link: newLink('tiktok'), duration_days: 1 }), 201);
    expectStatus(await inject(key, 'POST', `/videos/${stopped.id}/stop`), 200);
    const enabled = expectStatus(await inject(key, 'POST', '/webhooks', { url: ENDPOINT_URL, events: ['snapshot.created'] }), 201);
    const disabled = expectStatus(await inject(key, 'POST', '/webhooks', { url: `${ENDPOINT_URL}/2`, events: ['metric.alert'], description: 'off' }), 201);
    expectStatus(await inject(key, 'PATCH', `/webhooks/${disabled.id}`, { enabled: false }), 200);
    const alert = expectStatus(await inject(key, 'POST', '/alerts', { video_id: video.id, metric: 'views', condition: { crosses: 10 } }), 201);
    const all = expectStatus(await inject(key, 'POST', '/alerts', { video_id: 'all', metric: 'likes', condition: { grows_pct_24h: '12.5' } }), 201);
    const where = org === own && key === org.liveKey ? '' : '-elsewhere';
    pools[`videos${where}`]!.push(video.id, stopped.id);
    pools[`webhooks${where}`]!.push(enabled.id, disabled.id);
    pools[`alerts${where}`]!.push(alert.id, all.id);
  }
  // A delivery id of the right shape that no endpoint has.
  pools.deliveries!.push('msg_00000000000000000000000000000000');
}

describe('random requests at every documented operation', () => {
  before(async () => {
    own = await service.organization({ usd: '100000' });
    other = await service.organization({ usd: '100' });
    await furnish(own);
    await furnish(other);
  });

  test('never a 5xx; statuses, media types, bodies and error messages as documented; a refused request changes nothing', async () => {
    const ops = operations();
    assert.equal(ops.length, 19, 'the document lists every operation');
    const request = fc.oneof(...ops.map(requestOf));
    const logLength = async () => Number((await service.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM es.events')).rows[0]!.n);
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 8 }), async (requests) => {
        const before = { own: await stateOf(own), other: await stateOf(other) };
        const answers: string[] = [];
        for (const r of requests) {
          const sent = materialize(r);
          const key = r.key === 'live' ? own.liveKey : own.testKey;
          const events = await logLength();
          const response = await service.app.inject({
            method: sent.method as 'GET',
            url: sent.url,
            headers: { 'x-api-key': key, ...(sent.payload === undefined ? {} : { 'content-type': 'application/json' }) },
            ...(sent.payload === undefined ? {} : { payload: sent.payload }),
          });
          answers.push(describeSent(sent, response));
          checkAgainstDocument(r.op, sent, response);
          if (response.statusCode >= 400) assert.equal(await logLength(), events, `a refused request wrote to the log:\n${answers.at(-1)}`);
          // What the test key makes is elsewhere for the live key, which sends most requests.
          const where = r.key === 'live' ? '' : '-elsewhere';
          if (response.statusCode === 201 && r.op.path === '/webhooks') pools[`webhooks${where}`]!.push(response.json().id);
          if (response.statusCode === 201 && r.op.path === '/alerts') pools[`alerts${where}`]!.push(response.json().id);
          if (response.statusCode === 201 && r.op.path === '/videos/track') pools[`videos${where}`]!.push(response.json().id);
        }
        const now = { own: await stateOf(own), other: await stateOf(other) };
        assert.deepEqual(now.other, before.other, `requests of one organization changed the other's state:\n${answers.join('\n')}`);
        // Replay and recover change deliveries, not the log: what the API shows is compared too.
        if (answers.every((a) => / -> 4\d\d /.test(a))) assert.deepEqual(now.own, before.own, `refused requests changed the organization's state:\n${answers.join('\n')}`);
      }),
      { seed: 42, numRuns: 80, includeErrorInReport: true },
    );
  });
});

// ---- cursor pagination ----------------------------------------------------------------------------

interface Made {
  id: string;
  createdAt: string;
  platform: Platform;
  status: 'monitoring' | 'completed';
  mode: 'live' | 'test';
}

describe('walking the list by cursor', () => {
  const video = fc.record({
    platform: fc.constantFrom(...PLATFORMS),
    stop: fc.boolean(),
    mode: fc.constantFrom<'live' | 'test'>('live', 'live', 'test'),
    // Service-clock steps before it is tracked: none makes a tie the id breaks.
    stepMs: fc.constantFrom(0, 0, 1, 999, 60_000),
  });
  const walk = fc.record({
    videos: fc.array(video, { maxLength: 9 }),
    mode: fc.constantFrom<'live' | 'test'>('live', 'test'),
    platform: fc.option(fc.constantFrom(...PLATFORMS), { nil: undefined }),
    status: fc.option(fc.constantFrom('monitoring', 'completed'), { nil: undefined }),
    limits: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 6 }),
    tamper: fc.tuple(fc.nat(), fc.nat()),
  });

  test('every matching video exactly once, newest first (ties by id); a tampered cursor is a 400 naming cursor', async () => {
    await fc.assert(
      fc.asyncProperty(walk, async ({ videos, mode, platform, status, limits, tamper }) => {
        const org = await service.organization({ usd: '1000' });
        const made: Made[] = [];
        for (const v of videos) {
          service.clock.advance(v.stepMs);
          const key = v.mode === 'live' ? org.liveKey : org.testKey;
          const body = expectStatus(await inject(key, 'POST', '/videos/track', { video_link: linkOf(v.platform, platformId(v.platform)), duration_days: 1 }), 201);
          made.push({ id: body.id, createdAt: body.created_at, platform: v.platform, status: 'monitoring', mode: v.mode });
        }
        for (const [i, v] of videos.entries()) {
          if (!v.stop) continue;
          expectStatus(await inject(v.mode === 'live' ? org.liveKey : org.testKey, 'POST', `/videos/${made[i]!.id}/stop`), 200);
          made[i]!.status = 'completed';
        }
        const expected = made
          .filter((m) => m.mode === mode && (platform === undefined || m.platform === platform) && (status === undefined || m.status === status))
          .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? 1 : -1))
          .map((m) => m.id);
        const key = mode === 'live' ? org.liveKey : org.testKey;
        const filters = [platform === undefined ? '' : `platform=${platform}`, status === undefined ? '' : `status=${status}`].filter(Boolean);
        const seen: string[] = [];
        const cursors: string[] = [];
        let cursor: string | null = null;
        for (let page = 0; ; page++) {
          const limit = limits[page % limits.length]!;
          const query: string = [...filters, `limit=${limit}`, ...(cursor === null ? [] : [`cursor=${cursor}`])].join('&');
          const response: Response = await inject(key, 'GET', `/videos?${query}`);
          const body: Record<string, any> = expectStatus(response, 200);
          const where: string = `page ${page} of ?${query}: ${response.body.slice(0, 400)}`;
          assert.equal(body.limit, limit, where);
          assert.equal(body.total, body.videos.length, where);
          assert.ok(body.videos.length <= limit, where);
          seen.push(...body.videos.map((v: { id: string }) => v.id));
          cursor = body.next_cursor;
          assert.equal(response.headers.link === undefined, cursor === null, `a Link header exactly when there is a next page: ${where}`);
          if (cursor === null) break;
          assert.ok(body.videos.length === limit, `only the last page may be short: ${where}`);
          cursors.push(cursor);
          assert.ok(page < 20, 'the walk ends');
        }
        assert.deepEqual(seen, expected, `the walk over ${JSON.stringify(made)}`);
        // One character of an issued cursor changed: refused, never another page.
        if (cursors.length > 0) {
          const issued = cursors[tamper[0] % cursors.length]!;
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
          const at = tamper[1] % issued.length;
          const replacement = alphabet[(alphabet.indexOf(issued[at]!) + 1 + (tamper[1] % 63)) % 64]!;
          const forged = issued.slice(0, at) + replacement + issued.slice(at + 1);
          const response = await inject(key, 'GET', `/videos?${[...filters, `cursor=${forged}`].join('&')}`);
          assert.equal(response.statusCode, 400, `a tampered cursor ${forged} (issued ${issued}): ${response.body}`);
          assert.equal(response.json().error, 'Invalid request');
          assert.deepEqual(response.json().details.map((d: { field: string }) => d.field), ['cursor'], response.body);
        }
      }),
      { seed: 42, numRuns: 40, includeErrorInReport: true },
    );
  });
});

// ---- what is accepted reads back as it was answered -------------------------------------------

describe('webhook endpoints and alerts read back as accepted', () => {
  const description = fc.oneof(
    fc.string({ unit: 'grapheme', maxLength: 60 }),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.string({ unit: nastyChar, maxLength: 30 }),
    fc.constantFrom('😀'.repeat(500), '😀'.repeat(501), 'é'.repeat(500), 'e\u0301'.repeat(250), '\r\n\t', ''),
  );
  const events = fc.array(fc.constantFrom('snapshot.created', 'tracking.completed', 'metric.alert', 'balance.low', 'video.stopped'), { minLength: 1, maxLength: 6 });
  const change = fc.record({ url: urlText, events, description: fc.option(description), enabled: fc.boolean() }, { requiredKeys: [] });
  const count = fc.oneof(fc.nat(), fc.constantFrom(Number.MAX_SAFE_INTEGER), fc.bigInt({ min: 0n, max: 10n ** 30n - 1n }).map(String));
  const percent = fc.oneof(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.stringMatching(/^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/));
  const condition = fc.oneof(count.map((n) => ({ crosses: n })), count.map((n) => ({ grows_per_hour: n })), percent.map((p) => ({ grows_pct_24h: p })));
  const scenario = fc.record({
    endpoints: fc.array(fc.record({ url: urlText, events, description: fc.option(description, { nil: undefined }), changes: fc.array(change, { maxLength: 3 }) }), { minLength: 1, maxLength: 3 }),
    alerts: fc.array(fc.record({ metric: fc.constantFrom('views', 'likes', 'saves', 'replies'), condition }), { maxLength: 3 }),
  });

  test('the answer of every accepted create or change is what GET and the list show; a refused one changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ endpoints, alerts }) => {
        const org = await service.organization();
        const key = org.liveKey;
        const shown = new Map<string, Record<string, unknown>>();
        const checkShown = async (what: string) => {
          const list = expectStatus(await inject(key, 'GET', '/webhooks'), 200);
          assert.deepEqual(new Map(list.webhooks.map((w: { id: string }) => [w.id, w])), shown, `the list after ${what}`);
          for (const [id, answer] of shown) assert.deepEqual(expectStatus(await inject(key, 'GET', `/webhooks/${id}`), 200), answer, `GET after ${what}`);
        };
        for (const endpoint of endpoints) {
          const body = { url: endpoint.url, events: endpoint.events, ...(endpoint.description === undefined ? {} : { description: endpoint.description }) };
          const created = await inject(key, 'POST', '/webhooks', body);
          const what = `POST /webhooks ${shortText(JSON.stringify(body))} -> ${created.statusCode} ${shortText(created.body)}`;
          assert.ok(created.statusCode === 201 || created.statusCode === 400, what);
          if (created.statusCode === 201) {
            const { secret, ...answer } = created.json();
            assert.equal(typeof secret, 'string');
            assert.equal(answer.description, endpoint.description ?? null, what);
            assert.deepEqual(answer.events, [...new Set(endpoint.events)], what);
            assert.equal(answer.url, new URL(endpoint.url).href, what);
            shown.set(answer.id, answer);
          }
          await checkShown(what);
          if (created.statusCode !== 201) continue;
          const id = created.json().id;
          // What a client reads, sent back as it is, is taken and changes nothing it shows.
          const read = shown.get(id)!;
          const resent = await inject(key, 'PATCH', `/webhooks/${id}`, { url: read.url, events: read.events, description: read.description });
          const again = `PATCH with the endpoint as read ${shortText(JSON.stringify(read))} -> ${resent.statusCode} ${shortText(resent.body)}`;
          assert.equal(resent.statusCode, 200, again);
          const resentBody: Record<string, unknown> = resent.json();
          assert.deepEqual({ ...resentBody, updated_at: read.updated_at }, read, again);
          shown.set(id, resent.json());
          for (const patch of endpoint.changes) {
            const changed = await inject(key, 'PATCH', `/webhooks/${id}`, patch);
            const how = `PATCH ${shortText(JSON.stringify(patch))} -> ${changed.statusCode} ${shortText(changed.body)}`;
            assert.ok(changed.statusCode === 200 || changed.statusCode === 400, how);
            if (changed.statusCode === 200) {
              const answer = changed.json();
              const before: Record<string, unknown> = shown.get(id)!;
              const expected = {
                ...before,
                ...(patch.url === undefined ? {} : { url: new URL(patch.url).href }),
                ...(patch.events === undefined ? {} : { events: [...new Set(patch.events)] }),
                ...(patch.description === undefined ? {} : { description: patch.description }),
                ...(patch.enabled === undefined ? {} : { enabled: patch.enabled }),
                updated_at: answer.updated_at,
              };
              assert.deepEqual(answer, expected, how);
              shown.set(id, answer);
            }
            await checkShown(how);
          }
        }
        const made = new Map<string, unknown>();
        for (const alert of alerts) {
          const body = { video_id: 'all', ...alert };
          const created = await inject(key, 'POST', '/alerts', body);
          const what = `POST /alerts ${JSON.stringify(body)} -> ${created.statusCode} ${created.body}`;
          assert.ok(created.statusCode === 201 || created.statusCode === 400, what);
          if (created.statusCode === 201) {
            const answer = created.json();
            const [[kind, value]] = Object.entries(alert.condition);
            assert.deepEqual(answer.condition, { [kind!]: String(value) }, what);
            made.set(answer.id, answer);
          }
          const list = expectStatus(await inject(key, 'GET', '/alerts'), 200);
          assert.deepEqual(new Map(list.alerts.map((a: { id: string }) => [a.id, a])), made, `the list after ${what}`);
        }
      }),
      { seed: 42, numRuns: 50, includeErrorInReport: true },
    );
  });
});
