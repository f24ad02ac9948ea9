// Hostile and malformed input at every endpoint: nothing a client sends may produce a 5xx
// (the spec's own 500 and 502 at track come only from the platform's answer), and every
// error leaves in the spec's shape with one of the spec's messages (§7).
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { startTestService, type TestService } from '../support/service.ts';
import { API, client, expectStatus, newLink, tracked, type Client, type Response } from './helpers.ts';

let service: TestService;
let api: Client;
let videoId: string;
before(async () => {
  service = await startTestService();
  const org = await service.organization({ usd: '1000', plan: 'enterprise', rateLimit: 1_000_000 });
  api = client(service, org.liveKey);
  videoId = (await tracked(api, newLink(), 30)).id;
});
after(() => service.close());

/** The spec's messages per status (§4, §5, §7 and DESIGN §8). */
const MESSAGES: Record<number, string[]> = {
  400: ['Invalid request', 'Invalid platform', 'Video is not being monitored'],
  401: ['API key required'],
  402: ['Insufficient balance'],
  403: ['Access denied'],
  404: ['Video not found', 'Video not found or is private', 'Not found'],
  409: ['Video is already being tracked'],
  429: ['Rate limit exceeded'],
};

/** Problems found by the current test, reported together at its end. */
let problems: string[] = [];
beforeEach(() => {
  problems = [];
});
afterEach(() => {
  assert.deepEqual(problems, [], `${problems.length} answers broke the rules:\n${problems.slice(0, 30).join('\n')}`);
});

const short = (text: string) => (text.length > 120 ? `${text.slice(0, 120)}... (${text.length} chars)` : text);

/** Below 500, and an error body of the spec's shape with a message of the spec for its status. */
function expectSane(response: Response, what: string): void {
  const problem = (why: string) => problems.push(`${short(what)} -> ${response.statusCode} ${short(response.body)}: ${why}`);
  if (response.statusCode >= 500) return void problem('a server error');
  if (response.statusCode < 400) return;
  let body: Record<string, unknown>;
  try {
    body = response.json();
  } catch {
    return void problem('not JSON');
  }
  if (!MESSAGES[response.statusCode]) return void problem('not a status of the spec');
  if (!MESSAGES[response.statusCode]!.includes(body.error as string)) return void problem('not a message of the spec');
  if (body.error === 'Invalid request') {
    const details = body.details as Array<Record<string, unknown>>;
    if (!Array.isArray(details) || details.length === 0) return void problem('no details');
    if (!details.every((d) => typeof d.field === 'string' && typeof d.message === 'string')) problem('details are not { field, message }');
  }
}

const LONG = 'a'.repeat(100_000);
const STRINGS = [
  '',
  ' ',
  LONG,
  'é',
  '😀'.repeat(1000),
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\u202e',
  '%00',
  '%',
  '%%',
  '../../etc/passwd',
  '..\\..\\windows',
  "'; drop table videos; --",
  '<script>alert(1)</script>',
  '{{7*7}}',
  '${7*7}',
  'null',
  'undefined',
  'NaN',
  '-1',
  '1e309',
  '__proto__',
  'constructor',
];
const NUMBERS = [0, -0, -1, 0.1, 1e308, -1e308, 2 ** 53, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE, 1e-300];
const VALUES: unknown[] = [...STRINGS, ...NUMBERS, true, false, null, [], [1], {}, { a: 1 }, [[[[[]]]]], { __proto__: { admin: true } }];

describe('POST /videos/track', () => {
  test('any value in either field', async () => {
    for (const value of VALUES) {
      expectSane(await api.track(value, 7), `video_link=${JSON.stringify(value)?.slice(0, 40)}`);
      expectSane(await api.track(newLink(), value), `duration_days=${JSON.stringify(value)?.slice(0, 40)}`);
    }
  });

  test('links that look almost right', async () => {
    const links = [
      'https://www.youtube.com/watch?v=' + 'A'.repeat(5000),
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ' + '&x=1'.repeat(400),
      'https://www.tiktok.com/@' + 'u'.repeat(3000) + '/video/1',
      'https://www.tiktok.com/@üser/video/123456789',
      'https://www.tiktok.com/@a%00b/video/123456789',
      'https://www.tiktok.com/@<script>/video/123456789',
      'https://www.tiktok.com/@' + '😀' + '/video/7123456789012345671',
      'https://www.tiktok.com/@x/video/99999999999999999999999999',
      'https://x.com/someone/status/' + '9'.repeat(30),
      'https://x.com/someone/status/0',
      'https://www.instagram.com/p/' + 'C'.repeat(65) + '/',
      'https://vm.tiktok.com/' + 'Z'.repeat(33) + '/',
      'https://youtu.be/dQw4w9WgXc%51',
      'https://youtu.be/%2e%2e%2f%2e%2e',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ#' + '#'.repeat(1000),
      'HTTPS://WWW.YOUTUBE.COM/watch?v=dQw4w9WgXcQ',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ\n',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ\u0000',
      '\ufeffhttps://www.youtube.com/watch?v=dQw4w9WgXcQ',
      'https://xn--yutube-wqf.com/watch?v=dQw4w9WgXcQ',
      'https://www.youtube.com/watch?v[]=dQw4w9WgXcQ',
      'https://www.youtube.com/watch?v=dQw4w9WgXcQ&v=AAAAAAAAAAA',
      'data:text/html,<script>alert(1)</script>',
      'file:///etc/passwd',
      'http://169.254.169.254/latest/meta-data/',
    ];
    for (const link of links) {
      for (const days of [1, 30]) expectSane(await api.track(link, days), `track ${link.slice(0, 60)}`);
    }
  });

  test('raw bodies', async () => {
    const json = { 'content-type': 'application/json' };
    const bodies = [
      '',
      ' ',
      '{',
      '}',
      '[',
      '{"video_link": }',
      '{"video_link": "https://youtu.be/dQw4w9WgXcQ", "duration_days": 1e400}',
      '{"video_link": "https://youtu.be/dQw4w9WgXcQ", "duration_days": 01}',
      '{"video_link": "https://youtu.be/dQw4w9WgXcQ", "duration_days": 0x1}',
      '{"video_link": "https://youtu.be/dQw4w9WgXcQ", "duration_days": Infinity}',
      '{"__proto__": {"duration_days": 1}, "video_link": "https://youtu.be/dQw4w9WgXcQ"}',
      '{"constructor": {"prototype": {"x": 1}}, "video_link": "https://youtu.be/dQw4w9WgXcQ", "duration_days": 1}',
      '{"video_link": "\\ud800", "duration_days": 1}',
      '{"video_link": "https://youtu.be/dQw4w9WgXcQ", "video_link": 5, "duration_days": 1}',
      '['.repeat(10_000) + ']'.repeat(10_000),
      '{"a":'.repeat(5_000) + '1' + '}'.repeat(5_000),
      JSON.stringify({ video_link: newLink(), duration_days: 1, extra: 'x'.repeat(200_000) }),
      '\u0000',
      '\ufeff{}',
      'true',
      'null',
    ];
    for (const body of bodies) expectSane(await api.post('/videos/track', body, json), `raw body ${body.slice(0, 40)}`);
  });

  test('a body past the size limit', async () => {
    const huge = JSON.stringify({ video_link: newLink(), duration_days: 1, pad: 'x'.repeat(2 * 1024 * 1024) });
    expectSane(await api.post('/videos/track', huge, { 'content-type': 'application/json' }), 'a 2 MB body');
  });

  test('other content types and headers', async () => {
    const payload = JSON.stringify({ video_link: newLink(), duration_days: 1 });
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', 'application/jsonx', 'garbage', '']) {
      expectSane(await api.post('/videos/track', payload, { 'content-type': type }), `content-type ${type}`);
    }
    for (const key of ['', ' ', 'x'.repeat(10_000), '😀', '\u00e9t\u00e9', '../../etc']) {
      let response: Response;
      try {
        response = await api.track(newLink(), 1, { 'idempotency-key': key });
      } catch {
        continue; // the HTTP layer refuses some header values before the service sees them
      }
      expectSane(response, `idempotency-key ${key.slice(0, 20)}`);
    }
    expectSane(await api.track(newLink(), 1, { 'idempotency-key': ['a', 'b'] }), 'two idempotency keys');
  });
});

describe('GET /videos', () => {
  test('any value in any parameter, and repeated parameters', async () => {
    for (const name of ['platform', 'status', 'limit', 'offset', '__proto__', 'constructor']) {
      for (const value of STRINGS) {
        const encoded = encodeURIComponent(value.replace(/\ud800/, '\ufffd'));
        expectSane(await api.list(`${name}=${encoded}`), `${name}=${value.slice(0, 20)}`);
      }
      expectSane(await api.list(`${name}=a&${name}=b`), `${name} twice`);
      expectSane(await api.list(`${name}[]=a`), `${name}[]`);
      expectSane(await api.list(`${name}[x]=a`), `${name}[x]`);
    }
    for (const query of ['%', '%zz', '&&&', '=', 'limit', 'limit=', 'limit=%00', 'limit=1%00', 'limit=50&limit=50', '?', 'platform=youtube%00']) {
      expectSane(await api.list(query), `?${query}`);
    }
  });

  test('a very long query string', async () => {
    expectSane(await api.list(`platform=${'x'.repeat(50_000)}`), 'long platform');
    expectSane(await api.list(`junk=${'x'.repeat(50_000)}`), 'long unknown parameter');
  });
});

describe('GET /videos/{id} and POST /videos/{id}/stop', () => {
  const ids = [
    ...STRINGS.filter((s) => s !== ''),
    'x'.repeat(300),
    'x'.repeat(20_000),
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '../' + 'a',
  ];

  test('any id', async () => {
    for (const id of [...ids, videoId]) {
      const safe = id.replace(/\ud800/, '\ufffd');
      expectSane(await api.video(safe), `get ${safe.slice(0, 30)}`);
      expectSane(await api.stop(`${safe}x`), `stop ${safe.slice(0, 30)}`);
    }
  });

  test('raw paths', async () => {
    const paths = [
      '/videos/',
      '/videos//stop',
      '/videos/%00',
      '/videos/%00/stop',
      '/videos/%',
      '/videos/%E0%A4%A',
      '/videos/%ED%A0%80',
      '/videos/%C0%AF',
      '/videos/..%2F..%2Fetc%2Fpasswd',
      '/videos/../../etc/passwd',
      '/videos/./././.',
      '/videos/a/b/c',
      '/videos/%2e%2e',
      '/videos/' + encodeURIComponent('😀'),
      '/videos/;',
      '/videos/a;b=c',
      '/videos/a?b#c',
      '/videos/track/stop',
      '//videos',
      '/videos?limit=1#frag',
    ];
    for (const path of paths) {
      for (const method of ['GET', 'POST'] as const) {
        expectSane(await service.app.inject({ method, url: API + path, remoteAddress: '10.250.1.1' }), `${method} ${path} (no key)`);
        expectSane(method === 'GET' ? await api.get(path) : await api.post(path), `${method} ${path}`);
      }
    }
  });

  test('the monitored video is still there, untouched', async () => {
    const video = expectStatus(await api.video(videoId), 200);
    assert.equal(video.status, 'monitoring');
    assert.equal(video.snapshots.length, 1);
  });
});

describe('the other routes and methods', () => {
  test('GET /usage with junk around it', async () => {
    expectSane(await api.get('/usage?x=%00&y[]=1'), 'usage with a query');
    expectSane(await api.post('/usage', { a: 1 }), 'POST /usage');
  });

  test('unknown routes and methods', async () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
      for (const path of ['/', '/videos/track', '/videos', `/videos/${videoId}`, '/nothing', '/usage/..', '/openapi.json/x']) {
        expectSane(await service.app.inject({ method, url: API + path, headers: { 'x-api-key': 'vt_live_xxxxxxxxxxxxxxxxxxxxxxxx' }, remoteAddress: '10.250.0.1' }), `${method} ${path}`);
      }
    }
  });

  test('API key header junk', async () => {
    for (const key of ['x'.repeat(100_000), '😀', 'vt_live_' + '\u00e9'.repeat(20), 'vt_live_%00%00%00%00%00%00%00%00']) {
      let response: Response;
      try {
        response = await service.app.inject({ method: 'GET', url: `${API}/usage`, headers: { 'x-api-key': key }, remoteAddress: '10.250.0.2' });
      } catch {
        continue; // the HTTP layer refuses some header values before the service sees them
      }
      expectSane(response, `x-api-key ${key.slice(0, 20)}`);
    }
    expectSane(await service.app.inject({ method: 'GET', url: `${API}/usage`, headers: { 'x-api-key': ['a', 'b'] }, remoteAddress: '10.250.0.3' }), 'two keys');
  });
});
