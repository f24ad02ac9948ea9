import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ApiDeps } from '../context.ts';
import { presentUsage } from '../present.ts';
import { OPERATIONS } from '../reference.ts';
import type { UsageReads } from '../read-cache.ts';
import { errorsOf, Usage } from '../schemas.ts';

export const usageRoutes = (_deps: ApiDeps, usage: UsageReads): FastifyPluginAsyncTypebox => async (app) => {
  app.get('/usage', { schema: { ...OPERATIONS.getUsage, response: { 200: Usage, ...errorsOf() } } }, async (request) => {
    const caller = request.caller!;
    return presentUsage(await usage.read(caller.orgId, request.view!.version), caller.mode);
  });
};
