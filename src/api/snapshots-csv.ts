// A video's snapshots as CSV: the API's GET /videos/{id}/snapshots.csv and the dashboard's
// Download CSV send the same bytes. Every field is an id, a time or a decimal count (no
// platform text), so nothing needs quoting and nothing can be read as a spreadsheet formula.
import type { SnapshotRow, VideoRow } from '../../projections/queries.ts';
import { presentSnapshot } from './present.ts';

const COLUMNS = ['snapshot_id', 'snapshot_time', 'views', 'likes', 'comments', 'shares', 'saves', 'retweets', 'replies', 'provider'] as const;

export function snapshotsCsv(video: Pick<VideoRow, 'job_id'>, snapshots: readonly SnapshotRow[]): string {
  const lines = [COLUMNS.join(',')];
  for (const row of snapshots) {
    const s = presentSnapshot(video.job_id, row);
    lines.push(COLUMNS.map((c) => String(s[c] ?? '').replace(/[^\w.:+\-]/g, '')).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** `attachment; filename="<job>-snapshots.csv"` with only safe characters in the name. */
export function csvDisposition(video: Pick<VideoRow, 'job_id'>): string {
  return `attachment; filename="${video.job_id.replace(/[^\w-]/g, '_')}-snapshots.csv"`;
}
