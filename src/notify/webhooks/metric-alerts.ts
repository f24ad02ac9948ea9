// metric.alert from the log: for each new snapshot, the organization's alerts on that video
// (or on all its videos) are checked against the video's snapshots up to that one, so the
// answer is the same however far the read models have got; an alert fires when the snapshot
// meets its condition and the one before did not. Likewise only alerts that existed at the
// snapshot's place in the log watch it, however far behind the reactor reaches it.
import { alertFires, type AlertCondition, type AlertMetric, type MetricPoint } from '../../domain/alerts.ts';
import type { SnapshotRecorded } from '../../domain/video.ts';
import { comparePositions, type RecordedEvent } from '../../eventstore/port.ts';
import { presentSnapshot } from '../../api/present.ts';
import type { LoggedAlertRow, MetricAlertRow, SnapshotRow, VideoRow } from '../../../projections/queries.ts';
import type { OutboxMessage } from '../outbox.ts';
import { bodyOf } from './payloads.ts';

export interface AlertFiring {
  alert: MetricAlertRow;
  event: RecordedEvent;
  video: VideoRow;
  snapshot: SnapshotRow;
  value: string;
  previousValue: string | null;
}

/** The alerts a snapshot event is watched by: created before it in the log, and not deleted before it. */
export function alertsOn(event: RecordedEvent, alerts: readonly LoggedAlertRow[]): LoggedAlertRow[] {
  if (event.type !== 'SnapshotRecorded') return [];
  const data = event.data as SnapshotRecorded['data'];
  return alerts.filter(
    (a) =>
      a.org_id === data.orgId &&
      a.mode === data.mode &&
      (a.video_id === 'all' || a.video_id === data.videoId) &&
      data.metrics[a.metric as AlertMetric] !== undefined &&
      comparePositions(a.created, event.position) < 0 &&
      (a.deleted === null || comparePositions(event.position, a.deleted) < 0),
  );
}

/**
 * Which alerts the snapshot fires, given the video's snapshots that their conditions need
 * (readSnapshotsForAlerts; any that came after it are left out).
 */
export function firingsOf(event: RecordedEvent, alerts: readonly MetricAlertRow[], video: VideoRow, snapshots: readonly SnapshotRow[]): AlertFiring[] {
  const data = event.data as SnapshotRecorded['data'];
  const upTo = snapshots.filter((s) => s.slot <= data.slot);
  const snapshot = upTo.find((s) => s.slot === data.slot);
  if (!snapshot) return [];
  const firings: AlertFiring[] = [];
  // One list of points per metric, however many alerts watch it (up to 100 an organization).
  const pointsOf = new Map<AlertMetric, MetricPoint[]>();
  for (const alert of alerts) {
    const metric = alert.metric as AlertMetric;
    let points = pointsOf.get(metric);
    if (!points) {
      points = upTo.filter((s) => s[metric] !== null).map((s) => ({ time: s.snapshot_time.getTime(), value: BigInt(s[metric]!) }));
      pointsOf.set(metric, points);
    }
    if (points.length === 0 || points[points.length - 1]!.time !== snapshot.snapshot_time.getTime()) continue;
    if (!alertFires(alert.condition as AlertCondition, points)) continue;
    const previous = points.length > 1 ? points[points.length - 2]!.value.toString() : null;
    firings.push({ alert, event, video, snapshot, value: points[points.length - 1]!.value.toString(), previousValue: previous });
  }
  return firings;
}

export function alertBody(firing: AlertFiring): string {
  const { alert, video, snapshot } = firing;
  return bodyOf('metric.alert', snapshot.snapshot_time.toISOString(), {
    alert_id: alert.alert_id,
    video_id: video.video_id,
    platform: video.platform,
    metric: alert.metric,
    condition: alert.condition,
    value: firing.value,
    previous_value: firing.previousValue,
    snapshot: presentSnapshot(video.job_id, snapshot),
  });
}

function describeCondition(condition: Record<string, string>): string {
  if ('crosses' in condition) return `reached ${condition.crosses}`;
  if ('grows_per_hour' in condition) return `grew by at least ${condition.grows_per_hour} in an hour`;
  return `grew by at least ${condition.grows_pct_24h} % over 24 hours`;
}

/** The organization's e-mail of a firing; its Message-ID is the same on every attempt. */
export function alertEmail(firing: AlertFiring, org: { name: string; email: string }, from: string): OutboxMessage {
  const { alert, video } = firing;
  return {
    messageId: `<${alert.alert_id}.${firing.event.id}@vidtrack>`,
    // One alert fires for many videos ("all") at the same slot: each e-mail a file of its own.
    fileName: `${alert.alert_id}-${video.video_id}-${firing.snapshot.slot}`,
    message: {
      from,
      to: org.email,
      subject: `Alert: ${alert.metric} of a ${video.platform} video ${describeCondition(alert.condition)}${video.mode === 'test' ? ' [test mode]' : ''}`,
      text: [
        `Hello ${org.name},`,
        '',
        `The ${alert.metric} of ${video.video_link} (${video.platform}) ${describeCondition(alert.condition)}: ${firing.value}${firing.previousValue === null ? '' : ` (was ${firing.previousValue})`}.`,
        `Snapshot time: ${firing.snapshot.snapshot_time.toISOString()}`,
        `Video id: ${video.video_id}`,
        `Alert id: ${alert.alert_id}`,
        '',
        '-- vidtrack',
      ].join('\n'),
    },
  };
}
