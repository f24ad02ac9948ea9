// Metric alerts: create, list, delete. Writes are commands on the organization's alerts
// stream; reads come from the read model. An alert belongs to its key's mode, like videos.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createAlert, deleteAlert } from '../../commands/alert-commands.ts';
import { MAX_ALERTS_PER_ORGANIZATION, type AlertCondition } from '../../domain/alerts.ts';
import { DomainError } from '../../domain/errors.ts';
import { listAlerts, readAlert, readVideo, type MetricAlertRow } from '../../../projections/queries.ts';
import { AlertCreateBody, AlertDeleted, AlertList, AlertParams, ALERTS_TAG, Alert } from '../alert-schemas.ts';
import type { Caller } from '../auth.ts';
import { awaitProjection, type ApiDeps } from '../context.ts';
import { HttpError, invalidRequest } from '../errors.ts';
import { errorResponse, errorsOf, POSSIBLE_ID } from '../schemas.ts';

// The alert routes' own errors, for the reference (the shared ones speak of videos).
const TOO_MANY_ALERTS = {
  description: `The organization has ${MAX_ALERTS_PER_ORGANIZATION} alerts already, the limit (its live and test keys' alerts together)`,
  example: { error: 'Too many alerts', limit: MAX_ALERTS_PER_ORGANIZATION },
};
const ALERT_NOT_FOUND = { description: "No such alert (of this key's mode)", example: { error: 'Alert not found' } };
const ALERT_ACCESS_DENIED = { description: "Another organization's alert", example: { error: 'Access denied' } };

export function presentAlert(row: Pick<MetricAlertRow, 'alert_id' | 'video_id' | 'metric' | 'condition' | 'created_at'>) {
  return { id: row.alert_id, video_id: row.video_id, metric: row.metric, condition: row.condition, created_at: row.created_at.toISOString() };
}

/** The condition with its figure as a decimal string; JSON numbers beyond 2^53 have lost digits already. */
function conditionOf(body: AlertCreateBody['condition']): AlertCondition {
  const [[kind, value]] = Object.entries(body) as Array<[keyof AlertCondition, number | string]>;
  if (typeof value === 'number' && kind !== 'grows_pct_24h' && !Number.isSafeInteger(value)) {
    throw invalidRequest([{ field: `condition.${kind}`, message: `condition.${kind} beyond 2^53 must be sent as a decimal string` }]);
  }
  if (typeof value === 'number' && kind === 'grows_pct_24h') {
    const text = String(value);
    if (!/^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$/.test(text)) throw invalidRequest([{ field: 'condition.grows_pct_24h', message: 'condition.grows_pct_24h must be a percentage with at most 6 decimals' }]);
    return { grows_pct_24h: text };
  }
  return { [kind]: String(value) } as AlertCondition;
}

export const alertRoutes = (deps: ApiDeps): FastifyPluginAsyncTypebox => async (app) => {
  async function ownAlert(caller: Caller, id: string): Promise<MetricAlertRow> {
    const row = POSSIBLE_ID.test(id) ? await readAlert(deps.pool, id) : null;
    if (!row) throw new HttpError(404, { error: 'Alert not found' });
    if (row.org_id !== caller.orgId) throw new HttpError(403, { error: 'Access denied' });
    if (row.mode !== caller.mode) throw new HttpError(404, { error: 'Alert not found' });
    return row;
  }

  app.post(
    '/alerts',
    {
      schema: {
        operationId: 'createMetricAlert',
        summary: 'Create a metric alert',
        description:
          'Watches one video, or all of the organization\'s videos ("all"), for a metric meeting a condition: `{"crosses": N}`, `{"grows_per_hour": N}` or `{"grows_pct_24h": P}`. When a new snapshot meets it (and the one before did not), a `metric.alert` event goes to the webhooks subscribed to it and an e-mail to the organization.' +
          ` An organization has at most ${MAX_ALERTS_PER_ORGANIZATION} alerts, its live and test keys' together: one more is 409 \`Too many alerts\`.`,
        tags: [ALERTS_TAG],
        body: AlertCreateBody,
        response: { 201: Alert, ...errorsOf(403, 404), 409: errorResponse(409, TOO_MANY_ALERTS) },
      },
    },
    async (request, reply) => {
      const caller = request.caller!;
      const { video_id: videoId, metric } = request.body;
      const condition = conditionOf(request.body.condition);
      if (videoId !== 'all') {
        const video = POSSIBLE_ID.test(videoId) ? await readVideo(deps.pool, videoId) : null;
        if (!video || video.mode !== caller.mode) throw new HttpError(404, { error: 'Video not found' });
        if (video.org_id !== caller.orgId) throw new HttpError(403, { error: 'Access denied' });
      }
      const created = await createAlert(deps.store, deps.clock, { orgId: caller.orgId, mode: caller.mode, videoId, metric, condition }).catch((error: unknown) => {
        if (error instanceof DomainError && error.code === 'limit_reached') throw new HttpError(409, TOO_MANY_ALERTS.example);
        throw error;
      });
      await awaitProjection(deps, created.handled.position);
      const event = created.handled.events[0]!;
      return reply.code(201).send(presentAlert({ alert_id: created.alertId, video_id: videoId, metric, condition: condition as Record<string, string>, created_at: new Date(event.data.at) }));
    },
  );

  app.get(
    '/alerts',
    {
      schema: {
        operationId: 'listMetricAlerts',
        summary: 'List metric alerts',
        description: "The organization's metric alerts of the calling key's mode, oldest first.",
        tags: [ALERTS_TAG],
        response: { 200: AlertList, ...errorsOf() },
      },
    },
    async (request) => {
      const rows = await listAlerts(deps.pool, request.caller!.orgId, request.caller!.mode);
      return { alerts: rows.map(presentAlert), total: rows.length };
    },
  );

  app.delete(
    '/alerts/:id',
    {
      schema: {
        operationId: 'deleteMetricAlert',
        summary: 'Delete a metric alert',
        description: 'Deletes the alert: it fires no more.',
        tags: [ALERTS_TAG],
        params: AlertParams,
        response: { 200: AlertDeleted, ...errorsOf(), 403: errorResponse(403, ALERT_ACCESS_DENIED), 404: errorResponse(404, ALERT_NOT_FOUND) },
      },
    },
    async (request) => {
      const caller = request.caller!;
      const alert = await ownAlert(caller, request.params.id);
      const handled = await deleteAlert(deps.store, deps.clock, caller.orgId, alert.alert_id).catch((error: unknown) => {
        if (error instanceof DomainError && error.code === 'not_found') throw new HttpError(404, { error: 'Alert not found' });
        throw error;
      });
      await awaitProjection(deps, handled.position);
      return { success: true, id: alert.alert_id };
    },
  );
};
