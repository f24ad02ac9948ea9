import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { stopVideo } from '../../commands/video-commands.ts';
import { trackVideo } from '../../commands/track.ts';
import { DomainError } from '../../domain/errors.ts';
import { isLinkError, parseVideoLink } from '../../domain/links.ts';
import { estimatedCost, toUsd } from '../../domain/money.ts';
import { PLATFORMS } from '../../domain/platform.ts';
import { listVideos, readSnapshots, readVideo, type VideoRow } from '../../../projections/queries.ts';
import { awaitProjection, type ApiDeps } from '../context.ts';
import { HttpError, invalidRequest } from '../errors.ts';
import type { Caller } from '../auth.ts';
import { daysRemaining, presentListedVideo, presentVideoDetail } from '../present.ts';
import { NumberTemplate, VersionCache, daysHole, daysPlaceholder, sendJson, type UsageReads } from '../read-cache.ts';
import { LIST_LINK_HEADER, OPERATIONS } from '../reference.ts';
import { errorResponse, errorsOf, ListQuery, POSSIBLE_ID, SnapshotsCsvResponse, StopResult, TrackBody, TrackedVideo, TrackHeaders, VideoDetail, VideoList, VideoParams } from '../schemas.ts';
import { csvDisposition, snapshotsCsv } from '../snapshots-csv.ts';
import { decodeCursor, encodeCursor, INVALID_CURSOR, nextLink, type ListFilter } from '../list-cursor.ts';


/** A video's GET answer as of a version of the read models: its row (owner, clock-dependent fields) and its body. */
interface CachedDetail {
  video: VideoRow;
  body: NumberTemplate;
}

/** A list answer as of a version of the read models: its rows, its body and its next_cursor (null on the last page). */
interface CachedList {
  rows: VideoRow[];
  body: NumberTemplate;
  nextCursor: string | null;
}

/** Track's own 404 (spec §4.1 rule 4). */
const TRACK_NOT_FOUND = { description: 'The video is private or deleted, or the link leads nowhere', example: { error: 'Video not found or is private' } };

export const videoRoutes = (deps: ApiDeps, usage: UsageReads): FastifyPluginAsyncTypebox => async (app) => {
  // 720 snapshots make a body of about 150 kB: a few hundred such videos.
  const details = new VersionCache<CachedDetail>(64 * 2 ** 20);
  const lists = new VersionCache<CachedList>(32 * 2 ** 20);

  /** The caller's video, or the spec's 404/403. A test key's world holds only test-mode videos. */
  function checkOwner(caller: Caller, video: VideoRow | null): VideoRow {
    if (!video) throw new HttpError(404, { error: 'Video not found' });
    if (video.org_id !== caller.orgId) throw new HttpError(403, { error: 'Access denied' });
    if (video.mode !== caller.mode) throw new HttpError(404, { error: 'Video not found' });
    return video;
  }

  async function ownVideo(caller: Caller, id: string): Promise<VideoRow> {
    return checkOwner(caller, POSSIBLE_ID.test(id) ? await readVideo(deps.pool, id) : null);
  }

  app.post('/videos/track', { schema: { ...OPERATIONS.trackVideo, headers: TrackHeaders, body: TrackBody, response: { 201: TrackedVideo, ...errorsOf(402, 409, 500, 502), 404: errorResponse(404, TRACK_NOT_FOUND) } } }, async (request, reply) => {
    const caller = request.caller!;
    const link = parseVideoLink(request.body.video_link);
    if (isLinkError(link)) throw invalidRequest([{ field: 'video_link', message: link.error }]);
    const idempotencyKey = request.headers['idempotency-key'];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
      throw invalidRequest([{ field: 'Idempotency-Key', message: 'Idempotency-Key must be 1 to 255 characters' }]);
    }
    const durationDays = request.body.duration_days;
    const view = request.view!;
    const trackDeps = { ...deps, availableFunds: (orgId: string) => usage.availableFunds(orgId, view.version) };
    const outcome = await trackVideo(trackDeps, { orgId: caller.orgId, keyId: caller.keyId, mode: caller.mode, link, durationDays, idempotencyKey });
    switch (outcome.kind) {
      case 'tracked':
      case 'repeated': {
        // Read-your-writes for the GET that usually follows (a repeat may race its first
        // request). The answer itself comes from the log: when the bounded wait runs out,
        // a read model's lag must not turn a video just created into an error.
        await awaitProjection(deps, outcome.position);
        const video = outcome.video;
        return reply.code(201).send({
          id: video.videoId,
          job_id: video.jobId,
          video_link: video.videoLink,
          platform: video.platform,
          // The first answer, repeated as it was: a fresh tracking with its whole period ahead.
          status: 'monitoring',
          monitoring_duration_days: video.durationDays,
          days_remaining: video.durationDays,
          estimated_cost: toUsd(estimatedCost(video.durationDays)),
          created_at: video.startedAt,
        });
      }
      case 'duplicate':
        throw new HttpError(409, { error: 'Video is already being tracked', id: outcome.videoId });
      case 'insufficient_balance':
        throw new HttpError(402, {
          error: 'Insufficient balance',
          balance: toUsd(outcome.balance),
          estimated_cost: toUsd(outcome.estimatedCost),
          required: toUsd(outcome.estimatedCost - outcome.balance),
        });
      case 'not_found':
        throw new HttpError(404, { error: 'Video not found or is private' });
      case 'unavailable':
        throw new HttpError(502, { error: 'Failed to fetch video data from platform', details: [{ field: 'video_link', message: outcome.message }] });
      case 'invalid_response':
        throw new HttpError(500, { error: 'Failed to start monitoring - invalid response from tracking API' });
    }
  });

  app.get('/videos', { schema: { ...OPERATIONS.listVideos, querystring: ListQuery, response: { 200: { ...VideoList, headers: LIST_LINK_HEADER }, ...errorsOf() } } }, async (request, reply) => {
    const caller = request.caller!;
    const { platform, status, cursor, limit = 50 } = request.query;
    if (platform !== undefined && !(PLATFORMS as readonly string[]).includes(platform)) {
      throw new HttpError(400, { error: 'Invalid platform', valid_platforms: [...PLATFORMS] });
    }
    const filter: ListFilter = { orgId: caller.orgId, mode: caller.mode, platform, status };
    const after = cursor === undefined ? undefined : decodeCursor(cursor, filter);
    if (after === null) throw invalidRequest([{ field: 'cursor', message: INVALID_CURSOR }]);
    const linkNext = (nextCursor: string | null) => {
      if (nextCursor !== null) reply.header('link', nextLink(request.url, { platform, status, limit, cursor: nextCursor }));
    };
    const version = request.view!.version;
    // Every input of the page: the filter, the limit and where the page starts.
    const key = `${caller.orgId}\n${caller.mode}\n${platform ?? ''}\n${status ?? ''}\n${limit}\n${cursor ?? ''}`;
    let cached = version ? lists.get(key, version) : undefined;
    if (!cached) {
      // One row more than the page tells whether a next page exists, in the same query.
      const found = await listVideos(deps.pool, { ...filter, limit: limit + 1, after });
      const rows = found.slice(0, limit);
      const last = rows.at(-1);
      const nextCursor = found.length > limit && last ? encodeCursor(filter, { createdAt: last.created_at, videoId: last.video_id }) : null;
      const now = deps.clock.now();
      const page = (days: (v: VideoRow, i: number) => number) => ({
        videos: rows.map((v, i) => ({ ...presentListedVideo(v, now), days_remaining: days(v, i) })),
        total: rows.length,
        limit,
        next_cursor: nextCursor,
      });
      linkNext(nextCursor);
      if (!version) return page((v) => daysRemaining(v, now));
      const json = reply.serialize(page((_, i) => daysPlaceholder(i))) as string;
      const body = NumberTemplate.from(json, rows.map((_, i) => daysHole(i)), rows.map((v) => daysRemaining(v, now)));
      if (!body) return page((v) => daysRemaining(v, now));
      cached = { rows, body, nextCursor };
      lists.set(key, version, cached, body.bytes);
    } else linkNext(cached.nextCursor);
    const now = deps.clock.now();
    return sendJson(reply, cached.body.render(cached.rows.map((v) => daysRemaining(v, now))));
  });

  app.get('/videos/:id', { schema: { ...OPERATIONS.getVideo, params: VideoParams, response: { 200: VideoDetail, ...errorsOf(403, 404) } } }, async (request, reply) => {
    const caller = request.caller!;
    const id = request.params.id;
    const version = request.view!.version;
    let cached = version ? details.get(id, version) : undefined;
    if (!cached) {
      const video = await ownVideo(caller, id);
      const snapshots = await readSnapshots(deps.pool, video.video_id);
      const now = deps.clock.now();
      if (!version) return presentVideoDetail(video, snapshots, now);
      const json = reply.serialize({ ...presentVideoDetail(video, snapshots, now), days_remaining: daysPlaceholder(0) }) as string;
      const body = NumberTemplate.from(json, [daysHole(0)], [daysRemaining(video, now)]);
      if (!body) return presentVideoDetail(video, snapshots, now);
      cached = { video, body };
      details.set(video.video_id, version, cached, body.bytes);
    }
    const video = checkOwner(caller, cached.video);
    return sendJson(reply, cached.body.render([daysRemaining(video, deps.clock.now())]));
  });

  app.get('/videos/:id/snapshots.csv', { schema: { ...OPERATIONS.getVideoSnapshotsCsv, params: VideoParams, response: { 200: SnapshotsCsvResponse, ...errorsOf(403, 404) } } }, async (request, reply) => {
    const video = await ownVideo(request.caller!, request.params.id);
    const csv = snapshotsCsv(video, await readSnapshots(deps.pool, video.video_id));
    return reply.type('text/csv; charset=utf-8').header('content-disposition', csvDisposition(video)).send(csv);
  });

  app.post('/videos/:id/stop', { schema: { ...OPERATIONS.stopVideo, params: VideoParams, response: { 200: StopResult, ...errorsOf(403, 404) } } }, async (request) => {
    const video = await ownVideo(request.caller!, request.params.id);
    try {
      const handled = await stopVideo(deps.store, deps.clock, video.video_id);
      await awaitProjection(deps, handled.position);
      const completed = handled.events.find((e) => e.type === 'VideoCompleted');
      return {
        success: true,
        id: video.video_id,
        job_id: video.job_id,
        video_link: video.video_link,
        previous_status: completed?.type === 'VideoCompleted' ? completed.data.previousStatus : 'monitoring',
        new_status: 'completed' as const,
      };
    } catch (error) {
      if (error instanceof DomainError && error.code === 'not_monitoring') throw new HttpError(400, { error: 'Video is not being monitored' });
      throw error;
    }
  });
};
