// A real headless Chromium for the dashboard's tests, driven by playwright-core. Which one:
// CHROMIUM_PATH, else Debian's /usr/bin/chromium, else the build @sparticuz/chromium ships
// inside its npm package (decompressed to the temp folder on first use), so a fresh clone
// needs no apt step and no download. Every browser opened here is closed by closeBrowsers();
// a test process that dies leaves none either: playwright drives Chromium over a pipe, and
// Chromium exits when the pipe closes.
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { root } from './process.ts';

const SCREENSHOTS = path.join(root, 'test-artifacts', 'screenshots');
const open = new Set<Browser>();

async function executable(): Promise<{ path: string; args: string[] }> {
  if (process.env.CHROMIUM_PATH) return { path: process.env.CHROMIUM_PATH, args: [] };
  if (fs.existsSync('/usr/bin/chromium')) return { path: '/usr/bin/chromium', args: [] };
  const { default: sparticuz } = await import('@sparticuz/chromium');
  // Its flags are made for AWS Lambda: one process (closing a context would end the browser)
  // and the same-origin policy switched off, which would hide the very attacks tested here.
  const lambdaOnly = new Set(['--single-process', '--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials']);
  return { path: await sparticuz.executablePath(), args: sparticuz.args.filter((a) => !lambdaOnly.has(a)) };
}

export async function launchBrowser(): Promise<Browser> {
  const { path: executablePath, args } = await executable();
  const browser = await chromium.launch({ executablePath, args, headless: true, timeout: 60_000 });
  open.add(browser);
  browser.once('disconnected', () => open.delete(browser));
  return browser;
}

export async function closeBrowsers(): Promise<void> {
  await Promise.allSettled([...open].map((b) => b.close()));
}

/** A fresh context (its own cookies) with every wait bounded, at desktop or phone width. */
export async function newContext(browser: Browser, baseURL: string, width: 'desktop' | 'phone' = 'desktop'): Promise<BrowserContext> {
  // A locale of its own: under LANG=C Chromium reports "en-US@posix", which Intl (and so
  // uPlot, at load) refuses; a person's browser always has a real one.
  const context = await browser.newContext({ baseURL, locale: 'en-US', timezoneId: 'UTC', viewport: width === 'desktop' ? { width: 1280, height: 900 } : { width: 360, height: 740 }, acceptDownloads: true });
  context.setDefaultTimeout(15_000);
  context.setDefaultNavigationTimeout(30_000);
  return context;
}

/** test-artifacts/screenshots/<name>.png (gitignored), the whole page. */
export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}
