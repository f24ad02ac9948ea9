// GET /api/v1/docs: the interactive reference (Swagger UI), its assets served by the service
// itself (no CDN) under a Content-Security-Policy that allows nothing else, and no key needed;
// in a real browser it draws every operation and its "Try it out" calls the API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { closeBrowsers, launchBrowser, newContext } from '../support/browser.ts';
import { startTestService, type TestService } from '../support/service.ts';
import { API, client, newLink, tracked } from './helpers.ts';

let service: TestService;
let address: string;
before(async () => {
  service = await startTestService();
  address = await service.app.listen({ port: 0, host: '127.0.0.1' });
});
after(async () => {
  await closeBrowsers();
  await service?.close();
});

const get = (path: string) => fetch(`${address}${path}`, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });

/** The CSP header as directive -> sources. */
function csp(header: string | null): Map<string, string[]> {
  assert.ok(header, 'a Content-Security-Policy header');
  return new Map(
    header
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((parts) => parts[0])
      .map(([name, ...sources]) => [name!, sources]),
  );
}

describe('GET /api/v1/docs', () => {
  let html: string;
  let page: Response;
  before(async () => {
    page = await get(`${API}/docs`);
    html = await page.text();
  });

  test('answers 200 HTML without a key', () => {
    assert.equal(page.status, 200, html);
    assert.match(String(page.headers.get('content-type')), /^text\/html/);
    assert.match(html, /<div id="swagger-ui">/);
  });

  test('loads only scripts and styles of the service itself', () => {
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(sources.some((s) => s.endsWith('/swagger-ui-bundle.js')), html);
    for (const source of sources) assert.ok(source.startsWith(`${API}/docs/`), `${source} is served by the service`);
    assert.doesNotMatch(html, /<script>|<style>| style="/, 'no inline script or style (the CSP forbids them)');
    const policy = csp(page.headers.get('content-security-policy'));
    assert.deepEqual(policy.get('script-src'), ["'self'"]);
    assert.deepEqual(policy.get('style-src'), ["'self'"]);
    assert.deepEqual(policy.get('default-src'), ["'self'"]);
  });

  test('its JavaScript and stylesheet load', async () => {
    const sources = [...html.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    assert.ok(sources.length >= 4, `scripts and stylesheets: ${sources.join(', ')}`);
    for (const source of sources) {
      const asset = await get(source);
      const body = await asset.text();
      assert.equal(asset.status, 200, source);
      assert.match(String(asset.headers.get('content-type')), source.endsWith('.js') ? /javascript/ : /^text\/css/, source);
      assert.ok(body.length > 100, `${source} has content`);
    }
    const initializer = await (await get(`${API}/docs/static/swagger-initializer.js`)).text();
    assert.match(initializer, /SwaggerUIBundle/);
    assert.doesNotMatch(initializer, /validator\.swagger\.io/);
  });

  test('shows the document the API serves', async () => {
    const shown = await get(`${API}/docs/json`);
    assert.equal(shown.status, 200);
    const served = await get(`${API}/openapi.json`);
    assert.deepEqual(await shown.json(), await served.json());
  });
});

describe('in a browser', () => {
  test('draws every operation under its CSP, and "Try it out" lists videos with a key', async () => {
    const org = await service.organization({ usd: '10' });
    const video = await tracked(client(service, org.testKey), newLink('youtube'), 1);
    const browser = await launchBrowser();
    const context = await newContext(browser, address);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    // Requests anywhere but this service would be a CDN or a tracker: none may be made.
    const elsewhere: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(address) && !request.url().startsWith('data:')) elsewhere.push(request.url());
    });
    const document = (await (await fetch(`${address}${API}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(document.paths).reduce((n, path) => n + Object.keys(path).length, 0);
    assert.ok(operations >= 6, `the document lists the spec's operations (${operations})`);
    await page.goto(`${API}/docs`);
    await page.locator('.opblock').nth(operations - 1).waitFor();
    assert.equal(await page.locator('.opblock').count(), operations, 'every operation of the document is drawn');
    await page.getByText('List tracked videos').waitFor();

    await page.locator('button.authorize').first().click();
    await page.locator('.modal-ux input[type=text], .modal-ux input:not([type])').first().fill(org.testKey);
    await page.locator('.modal-ux button.authorize').click();
    await page.locator('.modal-ux button.close-modal').click();
    const list = page.locator('#operations-Videos-listVideos');
    await list.locator('.opblock-summary').click();
    await list.locator('button.try-out__btn').click();
    await list.locator('button.execute').click();
    const body = list.locator('.live-responses-table .response-col_description pre').first();
    await body.waitFor();
    const shown = JSON.parse((await body.textContent()) ?? '');
    assert.deepEqual(
      shown.videos.map((v: { id: string }) => v.id),
      [video.id],
      'the answer the reference shows is the API answer',
    );
    assert.deepEqual(problems, [], 'no CSP violation or error in the page');
    assert.deepEqual(elsewhere, [], 'nothing is loaded from elsewhere');
    await context.close();
  });
});
