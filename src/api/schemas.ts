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

type ErrorExample = { error: string; [extra: string]: unknown };

/** What each error status means (spec §7, DESIGN §8), for the reference, with a body it may have. */
const ERROR_RESPONSES: Record<number, { description: string; example: ErrorExample }> = {
  400: {
    description:
      'Bad request: `Invalid request` with `details` naming each field; on GET /videos also `Invalid platform` with `valid_platforms`; on stop `Video is not being monitored`',
    example: { error: 'Invalid request', details: [{ field: 'duration_days', message: 'duration_days must be <= 30' }] },
  },
  401: { description: 'Missing, invalid or deleted API key', example: { error: 'API key required' } },
  402: {
    description: 'The available balance does not cover the estimated cost',
    example: { error: 'Insufficient balance', balance: 1.2, estimated_cost: 3.6, required: 2.4 },
  },
  403: { description: "Another organization's video", example: { error: 'Access denied' } },
  404: { description: 'No such video (of this key\'s mode)', example: { error: 'Video not found' } },
  409: {
    description: 'The organization already tracks this video (in `monitoring` or `paused`)',
    example: { error: 'Video is already being tracked', id: '0b9c4a5e-3f0e-4a63-9d0c-6f3d2b1a8e47' },
  },
  429: {
    description: 'Rate limit exceeded; retry after X-RateLimit-Reset',
    example: { error: 'Rate limit exceeded', limit: 300, reset: 1772359260 },
  },
  500: {
    description: 'The tracking provider gave an invalid response',
    example: { error: 'Failed to start monitoring - invalid response from tracking API' },
  },
  502: {
    description: 'The platform could not be reached',
    example: { error: 'Failed to fetch video data from platform', details: [{ field: 'video_link', message: 'the platform did not answer' }] },
  },
  503: { description: 'Service temporarily unavailable (the database is out of reach); retry with backoff', example: { error: 'Service temporarily unavailable' } },
};

/** The error body of one status, described for the reference; a route may say it its own way. */
export function errorResponse(status: number, own?: { description: string; example: ErrorExample }) {
  const known = own ?? ERROR_RESPONSES[status];
  if (!known) throw new Error(`no error response is described for status ${status}`);
  return Type.Object(ErrorBody.properties, { additionalProperties: true, description: known.description, examples: [known.example] });
}

/**
 * The error statuses of a route, for serialization and the OpenAPI document: its own, and
 * those every route can answer (400 for a malformed or overlong URL or body, 401, 429, and
 * 503 while the database is out of reach).
 */
export function errorsOf(...own: number[]) {
  return Object.fromEntries([400, 401, 429, 503, ...own].map((status) => [status, errorResponse(status)]));
}

// Examples: one video seen through every answer of the API, so the reference reads as one story.
const EXAMPLE_ID = '0b9c4a5e-3f0e-4a63-9d0c-6f3d2b1a8e47';
const EXAMPLE_JOB = 'job_7ec4d5579f6153b071d702dd';
const EXAMPLE_LINK = 'https://www.youtube.com/watch?v=dQw4w9WgXcQ';
const EXAMPLE_STARTED = '2026-03-01T09:00:00.000Z';
const EXAMPLE_METADATA = { title: 'Never Gonna Give You Up', creator: 'Rick Astley', description: 'The official video' };

/** For the reference: the route checks the header's length itself, in the words of its 400. */
export const TrackHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({ description: 'Makes a retry safe: a second request with the same key (1 to 255 characters) answers the first response again and tracks nothing new' }),
  ),
});

export const TrackBody = Type.Object(
  {
    video_link: Type.String({ description: 'Full URL of a public video', maxLength: 2048 }),
    duration_days: Type.Integer({ minimum: 1, maximum: 30, description: 'Days to track, one snapshot per hour' }),
  },
  { additionalProperties: true, examples: [{ video_link: EXAMPLE_LINK, duration_days: 7 }] },
);
export type TrackBody = Static<typeof TrackBody>;

export const ListQuery = Type.Object(
  {
    // Any text: an unknown platform is the spec's own 400 `Invalid platform` (routes/videos.ts).
    platform: Type.Optional(Type.String({ description: 'Only videos of this platform: tiktok, youtube, instagram or twitter' })),
    status: Type.Optional(Type.Union(VIDEO_STATUSES.map((s) => Type.Literal(s)), { description: 'Only videos in this status' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Videos per page' })),
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
export const VideoParams = Type.Object({ id: Type.String({ description: 'The id returned by POST /videos/track' }) });
/** The snapshots as CSV (src/api/snapshots-csv.ts): a header row, then one row per snapshot, oldest first. */
export const SnapshotsCsv = Type.String({ description: 'text/csv: snapshot_id,snapshot_time,views,likes,comments,shares,saves,retweets,replies,provider' });
/** The 200 of GET /videos/{id}/snapshots.csv; its example sits on the media type, where OpenAPI 3.0 wants it. */
export const SnapshotsCsvResponse = {
  description: 'The snapshots as CSV',
  content: {
    'text/csv': {
      schema: SnapshotsCsv,
      example:
        'snapshot_id,snapshot_time,views,likes,comments,shares,saves,retweets,replies,provider\r\n' +
        'job_7ec4d5579f6153b071d702dd-000,2026-03-01T09:00:00.000Z,1523000412,17800211,2310554,,,,,youtube-data-api-v3\r\n' +
        'job_7ec4d5579f6153b071d702dd-001,2026-03-01T10:00:00.000Z,1523004930,17800263,2310561,,,,,youtube-data-api-v3\r\n',
    },
  },
};
export type VideoParams = Static<typeof VideoParams>;

const Platform = Type.Union(PLATFORMS.map((p) => Type.Literal(p)));
const Status = Type.Union(VIDEO_STATUSES.map((s) => Type.Literal(s)));

export const Metadata = Type.Object(
  { title: Type.Optional(Type.String()), creator: Type.Optional(Type.String()), description: Type.Optional(Type.String()) },
  { additionalProperties: true },
);

const EXAMPLE_SNAPSHOT = {
  id: 'e3a1f6d2-7b4c-4d8e-9f10-2a3b4c5d6e7f',
  snapshot_id: `${EXAMPLE_JOB}-001`,
  snapshot_time: '2026-03-01T10:00:00.000Z',
  views: '1523004930',
  likes: '17800263',
  comments: '2310561',
  provider: 'youtube-data-api-v3',
};

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
}, { examples: [EXAMPLE_SNAPSHOT] });

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

const EXAMPLE_CORE = {
  id: EXAMPLE_ID,
  job_id: EXAMPLE_JOB,
  video_link: EXAMPLE_LINK,
  platform: 'youtube',
  status: 'monitoring',
  monitoring_duration_days: 7,
  days_remaining: 6.9583,
  created_at: EXAMPLE_STARTED,
};
const EXAMPLE_LISTED = { ...EXAMPLE_CORE, monitoring_started: EXAMPLE_STARTED, current_metadata: EXAMPLE_METADATA };

export const TrackedVideo = Type.Object(
  { ...videoCore, estimated_cost: Type.Number() },
  { $id: 'TrackedVideo', description: 'The video, now tracked', examples: [{ ...EXAMPLE_CORE, days_remaining: 7, estimated_cost: 2.52 }] },
);

export const ListedVideo = Type.Object(
  { ...videoCore, monitoring_started: Type.String({ format: 'date-time' }), current_metadata: Metadata },
  { $id: 'ListedVideo', examples: [EXAMPLE_LISTED] },
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
  {
    $id: 'VideoDetail',
    description: 'The video with all its snapshots, oldest first',
    examples: [
      {
        ...EXAMPLE_LISTED,
        is_deleted: false,
        snapshots: [{ ...EXAMPLE_SNAPSHOT, id: 'c2d0e5f1-6a3b-4c7d-8e9f-1a2b3c4d5e6f', snapshot_id: `${EXAMPLE_JOB}-000`, snapshot_time: EXAMPLE_STARTED, views: '1523000412', likes: '17800211', comments: '2310554' }, EXAMPLE_SNAPSHOT],
        last_updated: '2026-03-01T10:00:00.000Z',
      },
    ],
  },
);

export const VideoList = Type.Object(
  {
  videos: Type.Array(ListedVideo),
  total: Type.Integer({ description: 'The number of videos in this answer' }),
  limit: Type.Integer({ description: 'The limit applied' }),
  // OpenAPI 3.0 spells "or null" as nullable, which fast-json-stringify also reads.
  next_cursor: Type.Unsafe<string | null>({
    type: 'string',
    nullable: true,
    description: 'The cursor of the next page (also in the Link header); null on the last page',
  }),
  },
  {
    description: 'A page of the videos, newest first',
    examples: [
      {
        videos: [EXAMPLE_LISTED],
        total: 1,
        limit: 1,
        next_cursor: 'eyJ2IjoxLCJ0IjoiMjAyNi0wMy0wMVQwOTowMDowMC4wMDBaIiwiaWQiOiIwYjljNGE1ZS0zZjBlLTRhNjMtOWQwYy02ZjNkMmIxYThlNDciLCJmIjoiVGhpc0lzQW5FeGFtcGxlT25seUEifQ',
      },
    ],
  },
);

export const StopResult = Type.Object(
  {
    success: Type.Boolean(),
    id: Type.String(),
    job_id: Type.String(),
    video_link: Type.String(),
    previous_status: Status,
    new_status: Status,
  },
  {
    description: 'The video is stopped: completed, its snapshots kept',
    examples: [{ success: true, id: EXAMPLE_ID, job_id: EXAMPLE_JOB, video_link: EXAMPLE_LINK, previous_status: 'monitoring', new_status: 'completed' }],
  },
);

export const Usage = Type.Object(
  {
    balance_usd: Type.Number(),
    total_snapshots: Type.Integer(),
    active_videos: Type.Integer(),
    uncharged_usage_usd: Type.Number(),
    total_charged_usd: Type.Number(),
    estimated_snapshots_remaining: Type.Integer(),
    cost_per_snapshot: Type.Number(),
  },
  {
    description: "The organization's balance and usage (for a test key: its test-mode usage, never charged)",
    examples: [
      {
        balance_usd: 22.5,
        total_snapshots: 180,
        active_videos: 3,
        uncharged_usage_usd: 0.27,
        total_charged_usd: 2.43,
        estimated_snapshots_remaining: 1500,
        cost_per_snapshot: 0.015,
      },
    ],
  },
);

export const Health = Type.Object({ status: Type.String() });

