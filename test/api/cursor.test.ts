// GET /videos?cursor=: cursor pagination (issue 11, DESIGN §8). Newest first, seek on
// (created_at, id); next_cursor and a Link header while there is a next page; a cursor works
// only with the filters (and organization and mode) it was issued for; a walk never skips or
// repeats a video that existed when it began, whatever is tracked or stopped meanwhile.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Platform } from '../../src/domain/platform.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { API, client, expectInvalid, expectStatus, newLink, tracked, type Client, type Response } from './helpers.ts';

let service: TestService;
before(async () => {
  service = await startTestService();
});
after(() => service.close());

interface Page {
  ids: string[];
  body: Record<string, any>;
  link: string | undefined;
}

function pageOf(response: Response): Page {
  const body = expectStatus(response, 200);
  const link = response.headers.link as string | undefined;
  return { ids: body.videos.map((v: { id: string }) => v.id), body, link };
}

/** The URL a Link header points to (`<url>; rel="next"`), checked for its shape. */
function linkTarget(link: string): string {
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(match, `Link header shape: ${link}`);
  return match[1]!;
}

/**
 * Every page of a list, by next_cursor, with `query` beside the cursor. `beside(n)`, when given,
 * runs while page n is asked for (the request and it are in flight together).
 */
async function walk(api: Client, query: string, beside: (page: number) => Promise<unknown> = async () => {}): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const sep = query && cursor ? '&' : '';
    const [response] = await Promise.all([api.list(`${query}${sep}${cursor ? `cursor=${encodeURIComponent(cursor)}` : ''}`), beside(pages.length + 1)]);
    const page = pageOf(response);
    pages.push(page);
    cursor = page.body.next_cursor;
    // A walk that does not end is a bug, not a slow test.
    assert.ok(pages.length <= 200, 'the walk ends');
  } while (cursor !== null);
  return pages;
}

/**
 * `count` videos of an organization, created over several service-clock times, three at a
 * time sharing one to the millisecond (the tie the id breaks).
 */
async function videos(api: Client, count: number, platforms: Platform[] = ['youtube']): Promise<void> {
  for (let i = 0; i < count; i++) {
    if (i % 3 === 0) service.clock.advance(60_000);
    await tracked(api, newLink(platforms[i % platforms.length]!), 1);
  }
}

async function allIds(api: Client, query = ''): Promise<string[]> {
  return pageOf(await api.list(`${query}${query ? '&' : ''}limit=100`)).ids;
}

describe('walking the pages', () => {
  let api: Client;
  let key: string;
  let expected: string[];
  before(async () => {
    const org = await service.organization({ usd: '100' });
    key = org.testKey;
    api = client(service, key);
    await videos(api, 11);
    expected = await allIds(api);
    assert.equal(expected.length, 11);
  });

  test('pages of a limit hold every video once, newest first, and the last has next_cursor null', async () => {
    const pages = await walk(api, 'limit=3');
    assert.deepEqual(
      pages.map((p) => p.ids.length),
      [3, 3, 3, 2],
    );
    assert.deepEqual(pages.flatMap((p) => p.ids), expected);
    for (const page of pages.slice(0, -1)) {
      assert.equal(typeof page.body.next_cursor, 'string');
      assert.equal(page.body.total, 3, 'total is the number in this answer');
      assert.equal(page.body.limit, 3);
    }
    const last = pages.at(-1)!;
    assert.equal(last.body.next_cursor, null);
    assert.equal(last.body.total, 2);
    assert.equal(last.link, undefined, 'no Link header on the last page');
  });

  test('newest first: created_at descending, ties by id', async () => {
    const body = pageOf(await api.list('limit=100')).body;
    const keys = body.videos.map((v: { created_at: string; id: string }) => [v.created_at, v.id] as const);
    assert.ok(new Set(keys.map(([t]: readonly [string, string]) => t)).size < keys.length, 'some videos share a created_at');
    for (let i = 1; i < keys.length; i++) {
      const [t0, id0] = keys[i - 1]!;
      const [t1, id1] = keys[i]!;
      assert.ok(t0 > t1 || (t0 === t1 && id0 < id1), `order at ${i}: ${t0} ${id0} then ${t1} ${id1}`);
    }
  });

  test('a page that ends exactly at the last video says there is no next page', async () => {
    const org = await service.organization({ usd: '100' });
    const exact = client(service, org.testKey);
    await videos(exact, 6);
    const pages = await walk(exact, 'limit=3');
    assert.deepEqual(
      pages.map((p) => [p.ids.length, p.body.next_cursor === null]),
      [
        [3, false],
        [3, true],
      ],
    );
  });

  test('the Link header points to the next page, with the same filters and limit', async () => {
    const first = pageOf(await api.list('limit=4'));
    const target = linkTarget(first.link!);
    const url = new URL(target, 'http://host');
    assert.equal(url.pathname, `${API}/videos`);
    assert.equal(url.searchParams.get('limit'), '4');
    assert.equal(url.searchParams.get('cursor'), first.body.next_cursor);
    const followed = pageOf(await service.app.inject({ method: 'GET', url: target, headers: { 'x-api-key': key } }));
    assert.deepEqual(followed.ids, expected.slice(4, 8));
    const filtered = pageOf(await api.list('platform=youtube&status=monitoring&limit=2'));
    const params = new URL(linkTarget(filtered.link!), 'http://host').searchParams;
    assert.deepEqual([params.get('platform'), params.get('status'), params.get('limit')], ['youtube', 'monitoring', '2']);
  });

  test('the same page asked twice (the read cache) keeps its body and its Link header', async () => {
    const first = pageOf(await api.list('limit=5'));
    const second = pageOf(await api.list(`limit=5&cursor=${first.body.next_cursor}`));
    const again = pageOf(await api.list(`limit=5&cursor=${first.body.next_cursor}`));
    assert.deepEqual(again.body, second.body);
    assert.equal(again.link, second.link);
    assert.ok(again.link, 'page 2 of 11 by 5 has a next page');
    assert.deepEqual(second.ids, expected.slice(5, 10));
    assert.notDeepEqual(second.ids, first.ids, 'the cursor is part of what the cache keeps a page under');
  });

  test('the limit may change from page to page', async () => {
    const first = pageOf(await api.list('limit=2'));
    const rest = pageOf(await api.list(`limit=100&cursor=${first.body.next_cursor}`));
    assert.deepEqual([...first.ids, ...rest.ids], expected);
    assert.equal(rest.body.next_cursor, null);
  });
});

describe('filters', () => {
  test('a walk with platform and status filters lists exactly the filtered videos', async () => {
    const org = await service.organization({ usd: '100' });
    const api = client(service, org.testKey);
    await videos(api, 12, ['youtube', 'tiktok']);
    const stopped = (await allIds(api, 'platform=youtube'))[1]!;
    expectStatus(await api.stop(stopped), 200);
    const expected = await allIds(api, 'platform=youtube&status=monitoring');
    assert.equal(expected.length, 5);
    const pages = await walk(api, 'platform=youtube&status=monitoring&limit=2');
    assert.deepEqual(pages.flatMap((p) => p.ids), expected);
  });
});

describe('400 naming cursor', () => {
  let api: Client;
  let org: Awaited<ReturnType<TestService['organization']>>;
  let cursor: string;
  before(async () => {
    org = await service.organization({ usd: '100' });
    api = client(service, org.testKey);
    await videos(api, 5, ['youtube', 'tiktok']);
    cursor = pageOf(await api.list('platform=youtube&limit=1')).body.next_cursor;
    assert.equal(typeof cursor, 'string');
  });

  test('a cursor sent with other filters', async () => {
    for (const query of ['', 'platform=tiktok', 'platform=youtube&status=monitoring', 'status=monitoring']) {
      const details = expectInvalid(await api.list(`${query}${query ? '&' : ''}cursor=${cursor}`), 'cursor');
      assert.deepEqual(details.map((d) => d.field), ['cursor'], query);
    }
    // The filters it was issued for take it.
    expectStatus(await api.list(`platform=youtube&cursor=${cursor}`), 200);
  });

  test("a cursor of another organization's or another mode's list", async () => {
    const other = await service.organization({ usd: '100' });
    expectInvalid(await client(service, other.testKey).list(`platform=youtube&cursor=${cursor}`), 'cursor');
    expectInvalid(await client(service, org.liveKey).list(`platform=youtube&cursor=${cursor}`), 'cursor');
  });

  test('a forged cursor', async () => {
    const json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const forge = (change: Record<string, unknown>) => Buffer.from(JSON.stringify({ ...json, ...change })).toString('base64url');
    const another = (await allIds(api)).find((id) => id !== json.id);
    const forged = [
      forge({ id: another }),
      forge({ t: '2030-01-01T00:00:00.000Z' }),
      forge({ f: 'A'.repeat(22) }),
      forge({ v: 2 }),
      forge({ t: 'yesterday' }),
      Buffer.from(JSON.stringify({ t: json.t, id: json.id })).toString('base64url'),
    ];
    for (const bad of forged) expectInvalid(await api.list(`platform=youtube&cursor=${bad}`), 'cursor');
  });

  test('a malformed cursor', async () => {
    const malformed = [
      'abc',
      '',
      cursor.slice(0, -3),
      `${cursor}x`,
      encodeURIComponent(`${cursor}=`),
      encodeURIComponent('not base64!'),
      Buffer.from('[1,2,3]').toString('base64url'),
      Buffer.from('null').toString('base64url'),
      'A'.repeat(600),
    ];
    for (const bad of malformed) {
      const response = await api.list(`platform=youtube&cursor=${bad}`);
      assert.equal(response.statusCode, 400, `cursor=${bad}: ${response.body.slice(0, 200)}`);
      const details = expectInvalid(response, 'cursor');
      assert.ok(details.every((d) => d.field === 'cursor'), bad);
    }
    expectInvalid(await api.list(`platform=youtube&cursor=${cursor}&cursor=${cursor}`), 'cursor');
  });
});

describe('a walk under concurrent tracking and stops', () => {
  test('never skips or repeats a video that existed when it began', async () => {
    const org = await service.organization({ usd: '100' });
    const api = client(service, org.testKey);
    await videos(api, 40, ['youtube', 'tiktok', 'instagram', 'twitter']);
    const existing = await allIds(api);
    assert.equal(existing.length, 40);
    const toStop = existing.filter((_, i) => i % 3 === 0);
    const added: string[] = [];
    let stops = 0;
    const pages = await walk(api, 'limit=4', async (page) => {
      // While each page after the first is asked for: new videos, some at the same service time
      // as the newest existing ones (ties broken by id may sort anywhere among them) and some
      // later; and stops of videos already listed and not yet listed.
      if (page === 1) return;
      if (page % 2 === 0) service.clock.advance(1_000);
      const work: Array<Promise<unknown>> = [];
      for (let i = 0; i < 2; i++) work.push(tracked(api, newLink('youtube'), 1).then((v) => added.push(v.id)));
      for (const id of toStop.splice(0, 2)) {
        stops++;
        work.push(api.stop(id).then((r) => expectStatus(r, 200)));
      }
      await Promise.all(work);
    });
    const listed = pages.flatMap((p) => p.ids);
    assert.equal(new Set(listed).size, listed.length, 'no video is listed twice');
    const missing = existing.filter((id) => !listed.includes(id));
    assert.deepEqual(missing, [], 'every video that existed when the walk began is listed');
    const strangers = listed.filter((id) => !existing.includes(id) && !added.includes(id));
    assert.deepEqual(strangers, []);
    // 40 videos by 4 make at least 10 pages: 9 of them beside writes.
    assert.ok(stops === 14 && added.length >= 18, `the walk ran beside writes: ${stops} stops, ${added.length} tracks`);
    // The stops did happen, and are what the walk shows for the videos it reached after them.
    const statuses = new Map(pages.flatMap((p) => p.body.videos.map((v: { id: string; status: string }) => [v.id, v.status])));
    assert.ok([...statuses.values()].includes('completed'));
  });
});
