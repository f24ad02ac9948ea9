// TypeBox schemas: they validate requests, serialize responses and produce the OpenAPI document.
import { Type, type Static } from '@sinclair/typebox';
import { PLATFORMS, VIDEO_STATUSES } from '../domain/platform.ts';
import { MAX_CURSOR_LENGTH } from './list-cursor.ts';

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { $id: 'Error', additionalProperties: true },
);

/**
 * The error statuses of a route, for serialization and the OpenAPI document: its own, and
 * those every route can answer (400 for a malformed or overlong URL or body, 401, 429, and
 * 503 while the database is out of reach).
 */
export function errorsOf(...own: number[]) {
  return Object.fromEntries([400, 401, 429, 503, ...own].map((status) => [status, ErrorBody]));
}

export const TrackBody = Type.Object(
  {
    video_link: Type.String({ description: 'Full URL of a public video', maxLength: 2048 }),
    duration_days: Type.Integer({ minimum: 1, maximum: 30 }),
  },
  { additionalProperties: true },
);
export type TrackBody = Static<typeof TrackBody>;

export const ListQuery = Type.Object(
  {
    platform: Type.Optional(Type.String()),
    status: Type.Optional(Type.Union(VIDEO_STATUSES.map((s) => Type.Literal(s)))),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
    cursor: Type.Optional(
      Type.String({
        maxLength: MAX_CURSOR_LENGTH,
        description: 'The next_cursor of the previous page, sent with the same platform and status: the next page, newest first. Leave out for the first page.',
      }),
    ),
  },
  { additionalProperties: true },
);
export type ListQuery = Static<typeof ListQuery>;

/**
 * Longest path id routed to a handler; longer ones are refused as a bad URL. The id is not
 * otherwise constrained here: whatever a client sends, an id the service never issued is the
 * spec's 404 `Video not found` (routes/videos.ts), not a 400.
 */
export const MAX_ID_LENGTH = 1_000;
/**
 * Ids the service issues are short printable text (UUIDs). Anything else cannot name a video,
 * and must not reach Postgres either: a NUL character there is an error, not a miss.
 */
export const POSSIBLE_ID = /^[\x21-\x7e]{1,200}$/;
export const VideoParams = Type.Object({ id: Type.String() });
/** The snapshots as CSV (src/api/snapshots-csv.ts): a header row, then one row per snapshot, oldest first. */
export const SnapshotsCsv = Type.String({ description: 'text/csv: snapshot_id,snapshot_time,views,likes,comments,shares,saves,retweets,replies,provider' });
export type VideoParams = Static<typeof VideoParams>;

const Platform = Type.Union(PLATFORMS.map((p) => Type.Literal(p)));
const Status = Type.Union(VIDEO_STATUSES.map((s) => Type.Literal(s)));

export const Metadata = Type.Object(
  { title: Type.Optional(Type.String()), creator: Type.Optional(Type.String()), description: Type.Optional(Type.String()) },
  { additionalProperties: true },
);

export const Snapshot = Type.Object({
  id: Type.String(),
  snapshot_id: Type.String(),
  snapshot_time: Type.String({ format: 'date-time' }),
  views: Type.Optional(Type.String()),
  likes: Type.Optional(Type.String()),
  comments: Type.Optional(Type.String()),
  shares: Type.Optional(Type.String()),
  saves: Type.Optional(Type.String()),
  retweets: Type.Optional(Type.String()),
  replies: Type.Optional(Type.String()),
  provider: Type.String(),
});

const videoCore = {
  id: Type.String(),
  job_id: Type.String(),
  video_link: Type.String(),
  platform: Platform,
  status: Status,
  monitoring_duration_days: Type.Integer(),
  days_remaining: Type.Number(),
  created_at: Type.String({ format: 'date-time' }),
};

export const TrackedVideo = Type.Object({ ...videoCore, estimated_cost: Type.Number() }, { $id: 'TrackedVideo' });

export const ListedVideo = Type.Object(
  { ...videoCore, monitoring_started: Type.String({ format: 'date-time' }), current_metadata: Metadata },
  { $id: 'ListedVideo' },
);

export const VideoDetail = Type.Object(
  {
    ...videoCore,
    monitoring_started: Type.String({ format: 'date-time' }),
    is_deleted: Type.Boolean(),
    current_metadata: Metadata,
    snapshots: Type.Array(Snapshot),
    last_updated: Type.String({ format: 'date-time' }),
  },
  { $id: 'VideoDetail' },
);

export const VideoList = Type.Object({
  videos: Type.Array(ListedVideo),
  total: Type.Integer({ description: 'The number of videos in this answer' }),
  limit: Type.Integer({ description: 'The limit applied' }),
  // OpenAPI 3.0 spells "or null" as nullable, which fast-json-stringify also reads.
  next_cursor: Type.Unsafe<string | null>({
    type: 'string',
    nullable: true,
    description: 'The cursor of the next page (also in the Link header); null on the last page',
  }),
});

export const StopResult = Type.Object({
  success: Type.Boolean(),
  id: Type.String(),
  job_id: Type.String(),
  video_link: Type.String(),
  previous_status: Status,
  new_status: Status,
});

export const Usage = Type.Object({
  balance_usd: Type.Number(),
  total_snapshots: Type.Integer(),
  active_videos: Type.Integer(),
  uncharged_usage_usd: Type.Number(),
  total_charged_usd: Type.Number(),
  estimated_snapshots_remaining: Type.Integer(),
  cost_per_snapshot: Type.Number(),
});

export const Health = Type.Object({ status: Type.String() });

