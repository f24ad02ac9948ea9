import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { stopVideo } from '../../commands/video-commands.ts';
import { trackVideo } from '../../commands/track.ts';
import { DomainError } from '../../domain/errors.ts';
import { isLinkError, parseVideoLink } from '../../domain/links.ts';
import { estimatedCost, toUsd } from '../../domain/money.ts';
import { PLATFORMS, type Platform } from '../../domain/platform.ts';
import { listVideos, readSnapshots, readVideo, type VideoRow } from '../../../projections/queries.ts';
import { awaitProjection, type ApiDeps } from '../context.ts';
import { HttpError, invalidRequest } from '../errors.ts';
import type { Caller } from '../auth.ts';
import { presentListedVideo, presentVideoDetail } from '../present.ts';
import { ErrorBody, ListQuery, StopResult, TrackBody, TrackedVideo, VideoDetail, VideoList, VideoParams } from '../schemas.ts';

const errors = { 400: ErrorBody, 401: ErrorBody, 402: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody, 500: ErrorBody, 502: ErrorBody };

export const videoRoutes = (deps: ApiDeps): FastifyPluginAsyncTypebox => async (app) => {
  /** The caller's video, or the spec's 404/403. A test key's world holds only test-mode videos. */
  async function ownVideo(caller: Caller, id: string): Promise<VideoRow> {
    const video = await readVideo(deps.pool, id);
    if (!video) throw new HttpError(404, { error: 'Video not found' });
    if (video.org_id !== caller.orgId) throw new HttpError(403, { error: 'Access denied' });
    if (video.mode !== caller.mode) throw new HttpError(404, { error: 'Video not found' });
    return video;
  }

  app.post('/videos/track', { schema: { body: TrackBody, response: { 201: TrackedVideo, ...errors } } }, async (request, reply) => {
    const caller = request.caller!;
    const link = parseVideoLink(request.body.video_link);
    if (isLinkError(link)) throw invalidRequest([{ field: 'video_link', message: link.error }]);
    const idempotencyKey = request.headers['idempotency-key'];
    if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || idempotencyKey.length === 0 || idempotencyKey.length > 255)) {
      throw invalidRequest([{ field: 'Idempotency-Key', message: 'Idempotency-Key must be 1 to 255 characters' }]);
    }
    const durationDays = request.body.duration_days;
    const outcome = await trackVideo(deps, { orgId: caller.orgId, keyId: caller.keyId, mode: caller.mode, link, durationDays, idempotencyKey });
    switch (outcome.kind) {
      case 'tracked':
      case 'repeated': {
        // A repeat may race its first request: wait until the read models hold what the log holds.
        await awaitProjection(deps, outcome.kind === 'tracked' ? outcome.position : await deps.store.headPosition());
        const video = await readVideo(deps.pool, outcome.videoId);
        if (!video) throw new Error(`video ${outcome.videoId} missing from the read model`);
        return reply.code(201).send({
          id: video.video_id,
          job_id: video.job_id,
          video_link: video.video_link,
          platform: video.platform as Platform,
          // The first answer, repeated as it was: a fresh tracking with its whole period ahead.
          status: 'monitoring',
          monitoring_duration_days: video.duration_days,
          days_remaining: video.duration_days,
          estimated_cost: toUsd(estimatedCost(video.duration_days)),
          created_at: video.created_at.toISOString(),
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

  app.get('/videos', { schema: { querystring: ListQuery, response: { 200: VideoList, ...errors } } }, async (request) => {
    const caller = request.caller!;
    const { platform, status, limit = 50 } = request.query;
    if (platform !== undefined && !(PLATFORMS as readonly string[]).includes(platform)) {
      throw new HttpError(400, { error: 'Invalid platform', valid_platforms: [...PLATFORMS] });
    }
    const rows = await listVideos(deps.pool, { orgId: caller.orgId, mode: caller.mode, platform, status, limit });
    const now = deps.clock.now();
    return { videos: rows.map((v) => presentListedVideo(v, now)), total: rows.length, limit };
  });

  app.get('/videos/:id', { schema: { params: VideoParams, response: { 200: VideoDetail, ...errors } } }, async (request) => {
    const video = await ownVideo(request.caller!, request.params.id);
    return presentVideoDetail(video, await readSnapshots(deps.pool, video.video_id), deps.clock.now());
  });

  app.post('/videos/:id/stop', { schema: { params: VideoParams, response: { 200: StopResult, ...errors } } }, async (request) => {
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
