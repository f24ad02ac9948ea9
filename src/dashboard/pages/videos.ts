// Videos `/videos`: the list (platform, status and mode filters, a search by link or title) and
// the form that tracks one link or many, one result per line. Tracking goes through the
// API's own command (src/commands/track.ts) with the same answers, in words.
import { awaitProjection, type ApiDeps } from '../../api/context.ts';
import { daysRemaining } from '../../api/present.ts';
import { UsageReads } from '../../api/read-cache.ts';
import { trackVideo, type TrackOutcome } from '../../commands/track.ts';
import { isLinkError, parseVideoLink } from '../../domain/links.ts';
import { PLATFORMS, VIDEO_STATUSES, type KeyMode, type Platform, type VideoStatus } from '../../domain/platform.ts';
import { count, days, usd } from './format.ts';
import { html, type Html } from './html.ts';
import { page, type Viewer } from './layout.ts';
import { searchVideos, type ListedVideo } from './queries.ts';
import { statusBadge } from './status.ts';

export interface VideoFilters {
  platform?: Platform;
  status?: VideoStatus;
  mode: KeyMode;
  text?: string;
}

const LIST_LIMIT = 200;
const MAX_LINES = 100;

/** Query-string filters; anything unknown is ignored rather than refused (a page, not an API). */
export function filtersOf(query: Record<string, unknown>): VideoFilters {
  const pick = <T extends string>(value: unknown, allowed: readonly T[]) => (allowed as readonly unknown[]).includes(value) ? (value as T) : undefined;
  const text = typeof query.q === 'string' ? query.q.trim().slice(0, 200) : '';
  return { platform: pick(query.platform, PLATFORMS), status: pick(query.status, VIDEO_STATUSES), mode: pick(query.mode, ['live', 'test'] as const) ?? 'live', text: text || undefined };
}

export interface TrackLine {
  line: string;
  outcome: 'tracked' | 'duplicate' | 'invalid' | 'insufficient' | 'failed';
  message: string;
  videoId?: string;
}

export interface TrackForm {
  links: string;
  days: string;
  mode: KeyMode;
  results?: TrackLine[];
  error?: string;
}

/** Tracks each non-empty line in turn (a repeated line meets its own first tracking: "already tracked"). */
export async function trackLines(deps: ApiDeps, who: { orgId: string; memberId: string }, form: TrackForm): Promise<TrackForm> {
  const durationDays = Number(form.days);
  if (!/^\d+$/.test(form.days.trim()) || durationDays < 1 || durationDays > 30) return { ...form, error: 'Days must be a whole number from 1 to 30.' };
  const lines = form.links.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  if (lines.length === 0) return { ...form, error: 'Paste at least one video link, one per line.' };
  if (lines.length > MAX_LINES) return { ...form, error: `At most ${MAX_LINES} links at a time.` };
  const usage = new UsageReads(deps.pool);
  const trackDeps = { ...deps, availableFunds: (orgId: string) => usage.availableFunds(orgId, null) };
  const results: TrackLine[] = [];
  for (const line of lines) {
    const link = parseVideoLink(line);
    if (isLinkError(link)) {
      results.push({ line, outcome: 'invalid', message: link.error });
      continue;
    }
    // Tracked from the dashboard: the member stands where an API key would (associated resources).
    const outcome = await trackVideo(trackDeps, { orgId: who.orgId, keyId: `member:${who.memberId}`, mode: form.mode, link, durationDays });
    if (outcome.kind === 'tracked' || outcome.kind === 'repeated') await awaitProjection(deps, outcome.position);
    results.push({ line, ...describe(outcome) });
  }
  return { ...form, results };
}

function describe(outcome: TrackOutcome): Omit<TrackLine, 'line'> {
  switch (outcome.kind) {
    case 'tracked':
    case 'repeated':
      return { outcome: 'tracked', message: 'Tracked', videoId: outcome.videoId };
    case 'duplicate':
      return { outcome: 'duplicate', message: 'Video is already being tracked', videoId: outcome.videoId };
    case 'insufficient_balance':
      // The available balance as it is, below zero too (tracks sent together can overdraw it):
      // what is missing is the cost less that balance, as the API's 402 says `required`.
      return { outcome: 'insufficient', message: `Insufficient balance: it costs ${usd(outcome.estimatedCost)}, the available balance is ${usd(outcome.balance)}, ${usd(outcome.estimatedCost - outcome.balance)} is missing` };
    case 'not_found':
      return { outcome: 'failed', message: 'Video not found or is private' };
    case 'unavailable':
      return { outcome: 'failed', message: `Failed to fetch video data from platform: ${outcome.message}` };
    case 'invalid_response':
      return { outcome: 'failed', message: 'Failed to start monitoring - invalid response from tracking API' };
  }
}

const OUTCOME_WORD: Record<TrackLine['outcome'], string> = { tracked: 'Tracked', duplicate: 'Already tracked', invalid: 'Invalid', insufficient: 'Insufficient balance', failed: 'Failed' };

function resultsList(results: readonly TrackLine[]): Html {
  return html`<ul data-testid="track-results" class="results" aria-live="polite">${results.map(
    (r) => html`<li class="result-${r.outcome}"><strong>${OUTCOME_WORD[r.outcome]}:</strong> <code class="wrap">${r.line}</code> — ${
      r.videoId ? html`<a href="/videos/${encodeURIComponent(r.videoId)}">${r.outcome === 'duplicate' ? 'open the video already tracked' : 'open it'}</a>` : r.message
    }${r.videoId && r.outcome === 'duplicate' ? html` (${r.message})` : ''}</li>`,
  )}</ul>`;
}

function option(value: string, label: string, selected: boolean): Html {
  return html`<option value="${value}"${selected ? html` selected` : ''}>${label}</option>`;
}

function latestMetrics(video: ListedVideo): Html {
  const l = video.latest;
  if (!l) return html`<span class="muted">no snapshot yet</span>`;
  const parts = (['views', 'likes', 'comments', 'shares'] as const).filter((m) => l[m] !== null).map((m) => html`<span>${count(l[m])} ${m}</span>`);
  return html`${parts.map((p, i) => html`${i > 0 ? ' · ' : ''}${p}`)}`;
}

export async function videosPage(deps: ApiDeps, viewer: Viewer, orgId: string, filters: VideoFilters, form: TrackForm): Promise<string> {
  const videos = await searchVideos(deps.pool, { orgId, limit: LIST_LIMIT, ...filters });
  const now = deps.clock.now();
  return page(
    viewer,
    'videos',
    'Videos',
    html`<section aria-labelledby="track-title" class="card">
<h2 id="track-title">Track videos</h2>
<form method="post" action="/videos/track" class="stack">
  ${viewer.csrf}
  <label for="links">Video links</label>
  <textarea id="links" name="links" rows="4" required aria-describedby="links-hint">${form.links}</textarea>
  <p id="links-hint" class="hint">One TikTok, YouTube, Instagram or X link per line. Each snapshot costs $0.015; a day is 24 snapshots.</p>
  <div class="row">
    <div><label for="days">Days</label> <input id="days" name="days" type="number" min="1" max="30" step="1" required value="${form.days}"></div>
    <div><label for="track-mode">Mode</label> <select id="track-mode" name="mode">${option('live', 'Live (billed)', form.mode === 'live')}${option('test', 'Test (simulated, free)', form.mode === 'test')}</select></div>
  </div>
  <button type="submit">Track</button>
</form>
${form.error ? html`<p class="notice error" role="alert"><strong>Error: </strong>${form.error}</p>` : ''}
${form.results ? resultsList(form.results) : ''}
</section>
<section aria-labelledby="list-title">
<h2 id="list-title">Tracked videos</h2>
<form method="get" action="/videos" class="filters">
  <div><label for="q">Search</label> <input id="q" name="q" type="search" value="${filters.text ?? ''}" placeholder="link or title"></div>
  <div><label for="platform">Platform</label> <select id="platform" name="platform">${option('', 'All', !filters.platform)}${PLATFORMS.map((p) => option(p, p, filters.platform === p))}</select></div>
  <div><label for="status">Status</label> <select id="status" name="status">${option('', 'All', !filters.status)}${VIDEO_STATUSES.map((s) => option(s, s, filters.status === s))}</select></div>
  <div><label for="mode">Mode</label> <select id="mode" name="mode">${option('live', 'Live', filters.mode === 'live')}${option('test', 'Test', filters.mode === 'test')}</select></div>
  <button type="submit">Filter</button>
</form>
${videos.length === 0 ? html`<p>No videos match.</p>` : html`<div class="scroll" tabindex="0" role="region" aria-label="Tracked videos">
<table class="videos">
<thead><tr><th scope="col">Video</th><th scope="col">Platform</th><th scope="col">Status</th><th scope="col">Days remaining</th><th scope="col">Latest metrics</th></tr></thead>
<tbody>${videos.map((v) => {
      const title = typeof v.current_metadata.title === 'string' && v.current_metadata.title.trim() ? v.current_metadata.title : v.video_link;
      return html`<tr><td><a href="/videos/${encodeURIComponent(v.video_id)}">${title}</a><br><span class="muted wrap">${v.video_link}</span></td><td>${v.platform}</td><td>${statusBadge(v.status)}</td><td>${days(daysRemaining(v, now))}</td><td>${latestMetrics(v)}</td></tr>`;
    })}</tbody>
</table>
</div>${videos.length === LIST_LIMIT ? html`<p class="hint">The newest ${LIST_LIMIT} are shown: search or filter to find others.</p>` : ''}`}
</section>`,
  );
}
