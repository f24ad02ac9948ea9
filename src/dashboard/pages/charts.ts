// A chart on a page: a figure with its caption, a text summary (so the chart is never the only
// way to read the figures) and, for /assets/charts.js to draw with uPlot, its series in the
// page's JSON block. `data-points` says how many points the chart holds.
import { html, jsonBlock, type Html } from './html.ts';

export interface Series {
  label: string;
  /** Seconds since the epoch, ascending. */
  x: number[];
  y: number[];
  kind: 'line' | 'bars';
  /** How values read in the axis and legend. */
  unit?: 'usd' | 'count';
}

/** The charts of one page: each figure's markup, then (once) their data for charts.js. */
export class ChartSet {
  private readonly series: Record<string, Series> = {};

  figure(id: string, series: Series, summary: Html | string): Html {
    this.series[id] = series;
    return html`<figure class="chart" data-testid="chart-${id}" data-chart="${id}" data-points="${series.x.length}">
  <figcaption>${series.label}</figcaption>
  <div class="plot" role="img" aria-label="${series.label}: ${series.x.length} points"></div>
  <p class="summary">${series.x.length === 0 ? 'No data yet.' : summary}</p>
</figure>`;
  }

  data(): Html {
    return jsonBlock('chart-data', this.series);
  }
}

const HOUR_S = 3600;
const DAY_S = 86_400;

/** Buckets filled in between first and last, so a gap reads as zero, not as a straight line. */
export function filledBuckets(points: ReadonlyArray<{ at: Date; value: number }>, stepSeconds: number, from?: Date, to?: Date): { x: number[]; y: number[] } {
  const byBucket = new Map<number, number>();
  for (const p of points) {
    const bucket = Math.floor(p.at.getTime() / 1000 / stepSeconds) * stepSeconds;
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + p.value);
  }
  const keys = [...byBucket.keys()];
  if (from) keys.push(Math.floor(from.getTime() / 1000 / stepSeconds) * stepSeconds);
  if (to) keys.push(Math.floor(to.getTime() / 1000 / stepSeconds) * stepSeconds);
  if (keys.length === 0) return { x: [], y: [] };
  const first = Math.min(...keys);
  const last = Math.max(...keys);
  const x: number[] = [];
  const y: number[] = [];
  for (let t = first; t <= last; t += stepSeconds) {
    x.push(t);
    y.push(byBucket.get(t) ?? 0);
  }
  return { x, y };
}

export const HOUR = HOUR_S;
export const DAY = DAY_S;
