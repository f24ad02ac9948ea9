// TypeBox schemas of the metric alert routes (beside schemas.ts, in the same manner).
import { Type, type Static } from '@sinclair/typebox';
import { ALERT_METRICS } from '../domain/alerts.ts';
import { TAGS } from './reference.ts';

export const ALERTS_TAG = TAGS.alerts;

const Metric = Type.Union(ALERT_METRICS.map((m) => Type.Literal(m)), { description: 'The metric watched' });
const Count = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0|[1-9][0-9]{0,29})$' })], {
  description: 'A count: an integer, or a decimal string (needed beyond 2^53)',
});
const Percent = Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^(0|[1-9][0-9]{0,8})(\\.[0-9]{1,6})?$' })], {
  description: 'A percentage, e.g. 50 or "12.5"',
});

export const Condition = Type.Union(
  [
    Type.Object({ crosses: Count }, { additionalProperties: false, description: 'The metric reaches N' }),
    Type.Object({ grows_per_hour: Count }, { additionalProperties: false, description: 'The metric grows by at least N in an hour' }),
    Type.Object({ grows_pct_24h: Percent }, { additionalProperties: false, description: 'The metric grew by at least P % over the last 24 hours' }),
  ],
  { description: 'Exactly one of crosses, grows_per_hour, grows_pct_24h' },
);

export const AlertCreateBody = Type.Object(
  { video_id: Type.String({ maxLength: 200, description: 'A video id, or "all" for every video of the organization (of the key\'s mode)' }), metric: Metric, condition: Condition },
  { additionalProperties: true, examples: [{ video_id: 'all', metric: 'views', condition: { crosses: 1000000 } }] },
);
export type AlertCreateBody = Static<typeof AlertCreateBody>;

export const AlertParams = Type.Object({ id: Type.String({ description: 'The alert id (alert_...)' }) });
export type AlertParams = Static<typeof AlertParams>;

const alertExample = {
  id: 'alert_5e0c1b2a3d4f4e6a8b9c0d1e',
  video_id: 'all',
  metric: 'views',
  condition: { crosses: '1000000' },
  created_at: '2026-03-01T12:00:00.000Z',
};

export const Alert = Type.Object(
  {
    id: Type.String(),
    video_id: Type.String(),
    metric: Type.String(),
    condition: Type.Record(Type.String(), Type.String(), { description: 'As created; counts and percentages as decimal strings' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'MetricAlert', examples: [alertExample] },
);

export const AlertList = Type.Object({ alerts: Type.Array(Alert), total: Type.Integer() }, { examples: [{ alerts: [alertExample], total: 1 }] });

export const AlertDeleted = Type.Object({ success: Type.Boolean(), id: Type.String() }, { examples: [{ success: true, id: alertExample.id }] });
