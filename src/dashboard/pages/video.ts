// A video `/videos/{id}`: what GET /api/v1/videos/{id} answers, drawn: metadata, status, days
// remaining, one chart per metric the platform reports, growth per hour, and the snapshots.
import type { ApiDeps } from '../../api/context.ts';
import { daysRemaining } from '../../api/present.ts';
import { HOUR_MS } from '../../clock.ts';
import type { SnapshotRow, VideoRow } from '../../../projections/queries.ts';
import { ChartSet } from './charts.ts';
import { count, days, when } from './format.ts';
import { html, type Html } from './html.ts';
import { confirmDialog, page, type Viewer } from './layout.ts';
import { statusBadge } from './status.ts';

export const METRICS = ['views', 'likes', 'comments', 'shares', 'saves', 'retweets', 'replies'] as const;
type Metric = (typeof METRICS)[number];

const LABELS: Record<Metric, string> = { views: 'Views', likes: 'Likes', comments: 'Comments', shares: 'Shares', saves: 'Saves', retweets: 'Retweets', replies: 'Replies' };

/** The metrics this video's platform reports: those present in any of its snapshots. */
export function metricsOf(snapshots: readonly SnapshotRow[]): Metric[] {
  return METRICS.filter((m) => snapshots.some((s) => s[m] !== null));
}

/** Average gain per hour between the first and the last snapshot (BigInt: counts may pass 2^53). */
function growthPerHour(points: ReadonlyArray<{ at: Date; value: string }>): string {
  if (points.length < 2) return '–';
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const hours = BigInt(Math.max(1, Math.round((last.at.getTime() - first.at.getTime()) / HOUR_MS)));
  const gain = BigInt(last.value) - BigInt(first.value);
  return `${gain < 0n ? '-' : '+'}${count((gain < 0n ? -gain : gain) / hours)}`;
}

function lastHour(points: ReadonlyArray<{ value: string }>): string {
  if (points.length < 2) return '–';
  const gain = BigInt(points[points.length - 1]!.value) - BigInt(points[points.length - 2]!.value);
  return `${gain < 0n ? '-' : '+'}${count(gain < 0n ? -gain : gain)}`;
}

/** A link to the platform only for the https URL the link parser accepted. */
function platformLink(video: VideoRow): Html {
  return /^https:\/\//.test(video.video_link) ? html`<a href="${video.video_link}" rel="noopener noreferrer nofollow" target="_blank">${video.video_link}</a>` : html`${video.video_link}`;
}

export function videoPage(deps: ApiDeps, viewer: Viewer, video: VideoRow, snapshots: readonly SnapshotRow[]): string {
  const meta = video.current_metadata as { title?: unknown; creator?: unknown; description?: unknown };
  const title = typeof meta.title === 'string' && meta.title.trim() ? meta.title : video.video_link;
  const metrics = metricsOf(snapshots);
  const charts = new ChartSet();
  const series = metrics.map((m) => {
    const points = snapshots.filter((s) => s[m] !== null).map((s) => ({ at: s.snapshot_time, value: s[m]! }));
    return { metric: m, points };
  });
  // Stop applies to a monitored video only (the API's 400 `Video is not being monitored`).
  const stoppable = video.status === 'monitoring';
  return page(
    viewer,
    'videos',
    title,
    html`<p class="crumbs"><a href="/videos">Videos</a> / ${video.platform}</p>
<dl class="meta">
  <div><dt>Status</dt><dd>${statusBadge(video.status)}${video.is_deleted ? ' (deleted on the platform)' : ''}</dd></div>
  <div><dt>Days remaining</dt><dd>${days(daysRemaining(video, deps.clock.now()))} of ${video.duration_days}</dd></div>
  <div><dt>Platform</dt><dd>${video.platform}</dd></div>
  <div><dt>Creator</dt><dd>${typeof meta.creator === 'string' && meta.creator ? meta.creator : '–'}</dd></div>
  <div><dt>Link</dt><dd class="wrap">${platformLink(video)}</dd></div>
  <div><dt>Started</dt><dd>${when(video.monitoring_started)}</dd></div>
  <div><dt>Snapshots</dt><dd>${count(snapshots.length)}</dd></div>
  <div><dt>Mode</dt><dd>${video.mode}</dd></div>
</dl>
${typeof meta.description === 'string' && meta.description ? html`<details><summary>Description</summary><p class="description">${meta.description}</p></details>` : ''}
<p class="actions"><a class="button" href="/videos/${encodeURIComponent(video.video_id)}/snapshots.csv" download>Download CSV</a>
${stoppable ? html`<button type="button" class="danger" data-confirm="stop-dialog">Stop tracking</button>` : ''}</p>
${video.status === 'paused' ? html`<p class="hint">Paused: the balance does not cover the next snapshot. Tracking resumes after a deposit, and can be stopped then.</p>` : ''}
${stoppable ? confirmDialog(viewer, { id: 'stop-dialog', action: `/videos/${encodeURIComponent(video.video_id)}/stop`, title: 'Stop tracking this video?', text: 'No more snapshots are collected or charged; the ones recorded stay.', confirm: 'Stop tracking' }) : ''}
<h2>Growth</h2>
${metrics.length === 0 ? html`<p>No snapshots yet: the first arrives within the hour.</p>` : html`<table class="growth">
<thead><tr><th scope="col">Metric</th><th scope="col">Latest</th><th scope="col">Last hour</th><th scope="col">Per hour on average</th></tr></thead>
<tbody>${series.map(({ metric, points }) => html`<tr><th scope="row">${LABELS[metric]}</th><td>${count(points[points.length - 1]?.value)}</td><td>${lastHour(points)}</td><td>${growthPerHour(points)}</td></tr>`)}</tbody>
</table>`}
<div class="charts">
${series.map(({ metric, points }) =>
  charts.figure(
    metric,
    { label: LABELS[metric], x: points.map((p) => Math.floor(p.at.getTime() / 1000)), y: points.map((p) => Number(p.value)), kind: 'line', unit: 'count' },
    html`${count(points[0]?.value)} at the first snapshot, ${count(points[points.length - 1]?.value)} at the latest.`,
  ),
)}
</div>
${charts.data()}
<h2>Snapshots</h2>
<div class="scroll" tabindex="0" role="region" aria-label="Snapshots table">
<table class="snapshots">
<thead><tr><th scope="col">Time</th>${metrics.map((m) => html`<th scope="col">${LABELS[m]}</th>`)}<th scope="col">Source</th></tr></thead>
<tbody>${[...snapshots].reverse().map(
      (s) => html`<tr><td>${when(s.snapshot_time)}</td>${metrics.map((m) => html`<td>${count(s[m])}</td>`)}<td>${s.provider}</td></tr>`,
    )}</tbody>
</table>
</div>`,
    { charts: true },
  );
}
