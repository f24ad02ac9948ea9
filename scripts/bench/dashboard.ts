// The dashboard in headless Chromium: how long a video page with a month of hourly snapshots
// (720) takes to load with its charts drawn, and how much JavaScript each page ships,
// gzipped. The service is the API role on a bench database; the video is tracked through the
// API and collected by the scheduler's real rounds; the member signs in through the form.
import { gzipSync } from 'node:zlib';
import { systemClock } from '../../src/clock.ts';
import { inviteMember, joinMember } from '../../src/commands/member-commands.ts';
import { hashPassword } from '../../src/dashboard/passwords.ts';
import { savePassword } from '../../src/dashboard/reads.ts';
import { closeBrowsers, launchBrowser, newContext } from '../../test/support/browser.ts';
import { createDatabase, startBenchApi, startBenchService } from './env.ts';
import { collectHours } from './http.ts';
import { seedOrganizations } from './seed.ts';
import type { Benchmark } from './types.ts';

const PASSWORD = 'a bench password of some length';

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export const dashboardBenchmark: Benchmark = {
  name: 'dashboard',
  async run(context) {
    const days = context.smoke ? 1 : 30;
    const loads = context.smoke ? 3 : 15;
    const service = await startBenchService(await createDatabase(context.server, 'bench_dashboard'));
    const api = await startBenchApi(service);
    const browser = await launchBrowser();
    try {
      const [org] = await seedOrganizations(service.store, service.clock, 1);
      const email = 'bench@example.test';
      const invited = await inviteMember(service.store, service.clock, systemClock, { orgId: org!.orgId, email, role: 'owner', by: 'operator' });
      await joinMember(service.store, service.clock, systemClock, { orgId: org!.orgId, memberId: invited.memberId, token: invited.token });
      await savePassword(service.pool, invited.memberId, await hashPassword(PASSWORD));
      const tracked = await fetch(`${api.base}/api/v1/videos/track`, {
        method: 'POST',
        headers: { 'x-api-key': org!.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ video_link: 'https://www.youtube.com/watch?v=benchDashbd', duration_days: days }),
      });
      if (tracked.status !== 201) throw new Error(`track answered ${tracked.status}: ${await tracked.text()}`);
      const { id } = (await tracked.json()) as { id: string };
      await service.settle();
      await collectHours(context, service, days * 24 - 1);
      await service.settle();

      const page = await (await newContext(browser, api.base)).newPage();
      await page.goto('/login');
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();

      const points = days * 24;
      const times: number[] = [];
      for (let i = 0; i < loads; i++) {
        const t0 = performance.now();
        await page.goto(`/videos/${id}`);
        // Drawn: every metric's chart holds its canvas, and says it has every snapshot.
        await page.waitForFunction((n) => {
          const charts = [...document.querySelectorAll('[data-chart]')];
          return charts.length === 3 && charts.every((c) => c.getAttribute('data-points') === String(n) && c.querySelector('canvas'));
        }, points);
        times.push(performance.now() - t0);
      }
      context.log(`video page with ${points} snapshots, ${loads} loads: ${times.map((t) => t.toFixed(0)).join(', ')} ms`);

      let largest = { page: '', bytes: 0 };
      for (const url of ['/', '/keys', '/videos', `/videos/${id}`, '/billing', '/members']) {
        await page.goto(url);
        const sources = await page.$$eval('script[src]', (scripts) => scripts.map((s) => (s as HTMLScriptElement).src));
        let bytes = 0;
        for (const source of sources) bytes += gzipSync(await (await page.request.get(source)).body()).length;
        context.log(`${url}: ${sources.length} scripts, ${(bytes / 1024).toFixed(1)} KB gzipped`);
        if (bytes > largest.bytes) largest = { page: url.startsWith('/videos/') ? '/videos/{id}' : url, bytes };
      }
      return [
        {
          figure: `video page with ${points} snapshots: loaded, charts drawn (median of ${loads})`,
          value: median(times),
          unit: 'ms',
          limit: null,
          limitLabel: '',
          target: '-',
          met: null,
          notes: `headless Chromium, same machine; fastest ${Math.min(...times).toFixed(0)} ms, slowest ${Math.max(...times).toFixed(0)} ms`,
        },
        {
          figure: `JavaScript shipped per page, gzipped (largest: ${largest.page})`,
          value: largest.bytes / 1024,
          unit: 'KB',
          limit: null,
          limitLabel: '',
          target: '< 150 KB',
          met: largest.bytes < 150 * 1024,
        },
      ];
    } finally {
      await closeBrowsers();
      await api.close();
      await service.close();
    }
  },
};
