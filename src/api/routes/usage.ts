import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { readUsage } from '../../../projections/queries.ts';
import type { ApiDeps } from '../context.ts';
import { presentUsage } from '../present.ts';
import { ErrorBody, Usage } from '../schemas.ts';

export const usageRoutes = (deps: ApiDeps): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/usage', { schema: { response: { 200: Usage, 401: ErrorBody, 429: ErrorBody } } }, async (request) => {
    const caller = request.caller!;
    return presentUsage(await readUsage(deps.pool, caller.orgId), caller.mode);
  });
};
