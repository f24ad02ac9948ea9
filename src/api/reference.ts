// The words of the API's reference: what the OpenAPI document (GET /api/v1/openapi.json) and
// the interactive reference (GET /api/v1/docs) say about the API and each operation. The
// schemas (schemas.ts) say the rest. Kept apart from the routes so that a route reads as what
// it does, and the reference reads as one text.

/** The document's info, tags and server; @fastify/swagger adds the paths and schemas. */
export function referenceDocument(apiPrefix: string) {
  return {
    info: {
      title: 'vidtrack video tracking API',
      version: 'v1',
      description: [
        'Tracks the public metrics of TikTok, YouTube, Instagram and Twitter/X videos: post a link and 1 to 30 days,',
        'and the service collects one snapshot per hour for that period, billing 0.015 USD per snapshot against the',
        "organization's prepaid balance.",
        '',
        'Every call carries the `X-API-Key` header. `vt_live_` keys are billed; `vt_test_` keys see only test-mode',
        'videos, which are collected from a simulator and never charged. Errors are JSON: `error` and, for a 400,',
        '`details` naming each field. Rate limits are per key; every answer carries `X-RateLimit-Limit`,',
        '`X-RateLimit-Remaining` and `X-RateLimit-Reset`.',
      ].join('\n'),
      // The project publishes no licence and no support address yet: these say so rather than
      // invent one (the licence link explains what having none means: all rights reserved).
      contact: { name: 'vidtrack operators' },
      license: { name: 'No licence: all rights reserved', url: 'https://choosealicense.com/no-permission/' },
    },
    servers: [{ url: apiPrefix, description: 'This service (the address the reference was loaded from)' }],
    tags: [
      { name: TAGS.videos, description: 'Track videos, list them, read their snapshots, stop them' },
      { name: TAGS.usage, description: "The organization's balance and what it has used" },
      { name: TAGS.webhooks, description: 'Endpoints that receive signed events (Standard Webhooks v1), and their deliveries' },
      { name: TAGS.alerts, description: 'Metric alerts: a metric.alert event when a new snapshot meets a condition' },
    ],
  };
}

export const TAGS = { videos: 'Videos', usage: 'Usage', webhooks: 'Webhooks', alerts: 'Alerts' } as const;

/** What the reference says about one operation (spread into a route's schema). */
interface Operation {
  operationId: string;
  summary: string;
  description: string;
  tags: string[];
}

export const OPERATIONS = {
  trackVideo: {
    operationId: 'trackVideo',
    summary: 'Start tracking a video',
    description: [
      'Creates a tracked video in status `monitoring`; its first snapshot is collected at once, then one every hour',
      'for `duration_days` days. `estimated_cost` is `duration_days x 24 x 0.015` USD; a live key needs that much of',
      'available balance (balance minus uncharged usage), else 402.',
      '',
      'An `Idempotency-Key` header (1 to 255 characters) makes a retry safe: the same key answers the first',
      "response again and tracks nothing new. A video the organization already tracks (in `monitoring` or `paused`) is 409 with its `id`.",
    ].join('\n'),
    tags: [TAGS.videos],
  },
  listVideos: {
    operationId: 'listVideos',
    summary: 'List tracked videos',
    description: [
      "The key's videos (its organization's, in its mode), newest first, filtered on the server (filters combine",
      'with AND). `total` is the number of videos in this answer.',
      '',
      'Pages: while there are more videos, the answer has a `next_cursor` and a `Link: <...>; rel="next"` header;',
      'send the cursor back as `cursor`, with the same `platform` and `status` (the `limit` may change), for the next',
      'page; `next_cursor` is null on the last page. Walking every page lists each video that existed when the walk',
      'began exactly once, whatever is tracked or stopped meanwhile (videos tracked during the walk may or may not',
      'appear; with a `status` filter, a video whose status changes may leave the list). A cursor is opaque and',
      'belongs to the filters it was issued for: any other is 400 `Invalid request` naming `cursor`.',
    ].join('\n'),
    tags: [TAGS.videos],
  },
  getVideo: {
    operationId: 'getVideo',
    summary: 'Get a video and its snapshots',
    description: [
      'The video with every snapshot collected so far, oldest first. Metrics are decimal strings (they may exceed',
      '2^53); a metric the platform does not report is left out. Twitter/X snapshots carry `comments` = replies and',
      "`shares` = retweets, and also `retweets` and `replies`. Another organization's video is 403.",
    ].join('\n'),
    tags: [TAGS.videos],
  },
  getVideoSnapshotsCsv: {
    operationId: 'getVideoSnapshotsCsv',
    summary: "Download a video's snapshots as CSV",
    description: 'The snapshots of GET /videos/{id} as a CSV file: a header row, then one row per snapshot, oldest first. Same access rules as GET /videos/{id}.',
    tags: [TAGS.videos],
  },
  stopVideo: {
    operationId: 'stopVideo',
    summary: 'Stop tracking a video',
    description: [
      'Ends a video in `monitoring` early: it becomes `completed`, its snapshots are kept and stay readable, and',
      'nothing more is collected or charged. It cannot be resumed; tracking the link again makes a new video.',
      'A video not in `monitoring` is 400 `Video is not being monitored`.',
    ].join('\n'),
    tags: [TAGS.videos],
  },
  getUsage: {
    operationId: 'getUsage',
    summary: 'Read balance and usage',
    description: [
      "The organization's balance, charges and snapshots. Available balance, what a new tracking may spend, is",
      '`balance_usd - uncharged_usage_usd`. A test key sees its test-mode snapshots and videos, never charged.',
    ].join('\n'),
    tags: [TAGS.usage],
  },
} satisfies Record<string, Operation>;

/** The Link header of a list page, for the reference. */
export const LIST_LINK_HEADER = {
  link: { type: 'string', description: 'RFC 8288 link to the next page, `<url>; rel="next"`; absent on the last page' },
} as const;

/** The rate-limit headers (spec §8) on every answer of a route that needs a key, for the reference. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { type: 'integer', description: "Requests allowed per minute: the key's, or an address's without a valid key" },
  'X-RateLimit-Remaining': { type: 'integer', description: 'Requests left in the current window' },
  'X-RateLimit-Reset': { type: 'integer', description: 'Unix time in seconds when the window resets; a 429 may be retried from then' },
} as const;
