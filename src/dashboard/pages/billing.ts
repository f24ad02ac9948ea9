// Billing `/billing`: deposits and charges replayed from the log (ledger.ts), spend per day, and
// the same ledger as CSV.
import type { Ledger, LedgerEntry } from '../../audit/ledger.ts';
import { toUsd } from '../../domain/money.ts';
import { DAY_MS } from '../../clock.ts';
import { ChartSet, DAY, filledBuckets } from './charts.ts';
import { count, usd, when } from './format.ts';
import { html } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { chargesOf } from './ledger.ts';

const DAYS_SHOWN = 90;

function describe(entry: LedgerEntry): string {
  if (entry.kind === 'deposit') return `Deposit${entry.reference ? `: ${entry.reference}` : ''}`;
  const snapshots = entry.snapshots ?? 0;
  return `Charge for ${snapshots} ${snapshots === 1 ? 'snapshot' : 'snapshots'}`;
}

export function billingPage(viewer: Viewer, ledger: Ledger, now: Date): string {
  const since = now.getTime() - DAYS_SHOWN * DAY_MS;
  const perDay = filledBuckets(chargesOf(ledger).filter((c) => c.at.getTime() >= since), DAY, new Date(since + DAY_MS), now);
  const charts = new ChartSet();
  const deposited = ledger.entries.filter((e) => e.kind === 'deposit').reduce((sum, e) => sum + e.amount, 0);
  return page(
    viewer,
    'billing',
    'Billing',
    html`<dl class="figures">
  <div><dt>Balance</dt><dd>${usd(ledger.balance)}</dd></div>
  <div><dt>Deposited</dt><dd>${usd(deposited)}</dd></div>
  <div><dt>Total charged</dt><dd>${usd(ledger.totalCharged)}</dd></div>
  <div><dt>Snapshots charged</dt><dd>${count(ledger.snapshotsCharged)}</dd></div>
</dl>
<p class="hint">Replayed from the event log, as <code>npm run audit</code> replays it. Recorded snapshots are charged in batches; what is recorded and not yet charged shows on the Overview.</p>
<div class="charts">${charts.figure('spend-per-day', { label: 'Spend per day', ...perDay, kind: 'bars', unit: 'usd' }, `${usd(perDay.y.reduce((a, b) => a + b, 0))} charged in the last ${DAYS_SHOWN} days.`)}</div>
${charts.data()}
<h2>Ledger</h2>
<p><a class="button" href="/billing.csv" download>Download CSV</a></p>
${ledger.entries.length === 0 ? html`<p>No deposits or charges yet.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Ledger">
<table class="ledger">
<thead><tr><th scope="col">Time</th><th scope="col">Entry</th><th scope="col" class="num">Amount</th></tr></thead>
<tbody>${[...ledger.entries].reverse().map(
        (e) => html`<tr><td>${when(e.at)}</td><td>${describe(e)}</td><td class="num">${e.kind === 'charge' ? usd(-e.amount) : usd(e.amount)}</td></tr>`,
      )}</tbody>
</table>
</div>`}`,
    { charts: true },
  );
}

/** One row per entry; the reference is the only free text, so it is quoted and kept from reading as a formula. */
export function billingCsv(ledger: Ledger): string {
  const quote = (text: string) => `"${text.replace(/^[=+\-@\t\r]/, "'$&").replace(/"/g, '""')}"`;
  const rows = ledger.entries.map((e) =>
    [e.at, e.kind, toUsd(e.kind === 'charge' ? -e.amount : e.amount), e.snapshots ?? '', quote(e.reference ?? '')].join(','),
  );
  return `${['time,kind,amount_usd,snapshots,reference', ...rows].join('\r\n')}\r\n`;
}
