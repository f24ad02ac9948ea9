// Overview `/`: the figures GET /api/v1/usage answers for a live key, the available balance the
// 402 check compares, and charts of snapshots per hour and spend per day.
import { DAY_MS, HOUR_MS } from '../../clock.ts';
import { SNAPSHOT_PRICE } from '../../domain/money.ts';
import { readUsage } from '../../../projections/queries.ts';
import type { ApiDeps } from '../../api/context.ts';
import { ChartSet, DAY, filledBuckets, HOUR } from './charts.ts';
import { count, usd } from './format.ts';
import { html } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { accountLedger, chargesOf } from './ledger.ts';
import { snapshotsPerHour } from './queries.ts';

const HOURS_SHOWN = 48;
const DAYS_SHOWN = 30;

export async function overviewPage(deps: ApiDeps, viewer: Viewer, orgId: string): Promise<string> {
  const now = deps.clock.now();
  const [usage, ledger, hourly] = await Promise.all([
    readUsage(deps.pool, orgId),
    accountLedger(deps.store, orgId),
    snapshotsPerHour(deps.pool, orgId, new Date(now.getTime() - HOURS_SHOWN * HOUR_MS)),
  ]);
  const u = usage ?? { balance: 0, totalCharged: 0, uncharged: 0, liveSnapshots: 0, activeLive: 0 };
  const available = u.balance - u.uncharged;
  const perHour = filledBuckets(hourly.map((h) => ({ at: h.hour, value: h.snapshots })), HOUR, new Date(now.getTime() - (HOURS_SHOWN - 1) * HOUR_MS), now);
  const since = now.getTime() - DAYS_SHOWN * DAY_MS;
  const perDay = filledBuckets(chargesOf(ledger).filter((c) => c.at.getTime() >= since), DAY, new Date(since + DAY_MS), now);
  const spent = perDay.y.reduce((a, b) => a + b, 0);
  const charts = new ChartSet();
  const figures: Array<[string, string, string?]> = [
    ['Balance', usd(u.balance)],
    ['Available balance', usd(available), 'balance minus uncharged usage: what new trackings can use'],
    ['Uncharged usage', usd(u.uncharged), 'snapshots recorded, not yet charged'],
    ['Total charged', usd(u.totalCharged)],
    ['Estimated snapshots remaining', count(Math.max(0, Math.floor(u.balance / SNAPSHOT_PRICE))), `at ${usd(SNAPSHOT_PRICE)} per snapshot`],
    ['Active videos', count(u.activeLive)],
  ];
  return page(
    viewer,
    'overview',
    'Overview',
    html`<dl class="figures">${figures.map(
      ([label, value, hint]) => html`<div><dt>${label}</dt><dd>${value}</dd>${hint ? html`<dd class="hint">${hint}</dd>` : ''}</div>`,
    )}</dl>
<p class="hint">Live keys only: test-mode videos are never charged. ${count(u.liveSnapshots)} live snapshots recorded in all.</p>
<div class="charts">
${charts.figure('snapshots-per-hour', { label: 'Snapshots per hour', ...perHour, kind: 'bars', unit: 'count' }, `${count(perHour.y.reduce((a, b) => a + b, 0))} snapshots in the last ${HOURS_SHOWN} hours.`)}
${charts.figure('spend-per-day', { label: 'Spend per day', ...perDay, kind: 'bars', unit: 'usd' }, `${usd(spent)} charged in the last ${DAYS_SHOWN} days.`)}
</div>
${charts.data()}`,
    { charts: true },
  );
}
