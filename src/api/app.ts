// The HTTP API, built by a function of its dependencies (tests call it with a real
// database and use app.inject). Plugins in order: external, then ours, then routes.
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import { Redis } from 'ioredis';
import { dashboardPlugin } from '../dashboard/plugin.ts';
import { BatchingEventStore } from '../eventstore/batching.ts';
import { registerAuth, type Gate } from './auth.ts';
import type { ApiDeps } from './context.ts';
import { registerDocs } from './docs.ts';
import { clientErrorHandler, frameworkErrors, refuseExpectation, registerErrorHandling } from './errors.ts';
import { KeyCache } from './key-cache.ts';
import { refuseUnstorableText } from './storable-input.ts';
import { ReadBarrier } from './read-barrier.ts';
import { UsageReads } from './read-cache.ts';
import { usageRoutes } from './routes/usage.ts';
import { videoRoutes } from './routes/videos.ts';
import { RATE_LIMIT_HEADERS, referenceDocument } from './reference.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { alertRoutes } from './routes/alerts.ts';
import { healthHandler } from './health.ts';
import { Health, MAX_ID_LENGTH } from './schemas.ts';

export const API_PREFIX = '/api/v1';

/** pino options for the API: JSON lines with each request's id; a key is never written. */
export function apiLogger(level: string, stream?: NodeJS.WritableStream) {
  return {
    level,
    redact: { paths: ['req.headers["x-api-key"]', 'headers["x-api-key"]'], censor: '[redacted]' },
    serializers: { req: loggedRequest },
    ...(stream ? { stream } : {}),
  };
}

/**
 * Fastify's own request serializer, with the one secret a URL carries masked: an invitation's
 * token (`/invite/<token>`), which sets an account's password until it is used.
 */
function loggedRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: request.url.replace(/^\/invite\/[^/?#]+/, '/invite/[redacted]'),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** Bodies are validated strictly (a string is not an integer); query strings are text, so they are coerced. */
function validators() {
  const options = { allErrors: true, useDefaults: true, removeAdditional: false, strict: false } as const;
  return { body: new Ajv({ ...options, coerceTypes: false }), other: new Ajv({ ...options, coerceTypes: true }) };
}

/**
 * Many clients send `Content-Type: application/json` on every call, also on the bodiless
 * POST /videos/{id}/stop: Fastify's own parser rejects such an empty body (400), so an
 * empty JSON body is taken as no body. Routes that need a body still say so through their
 * schema (track: 400 `Invalid request`, field `body`).
 */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body.length === 0) return done(null, undefined);
    parseJson(request, body as string, done);
  });
}

export async function buildApp(given: ApiDeps, options: FastifyServerOptions = {}) {
  // Set once the API's hooks exist; the router's own refusals go through it (errors.ts).
  let gate: Gate | null = null;
  // Concurrent commands share commits (group commit); see eventstore/batching.ts.
  const deps: ApiDeps = { ...given, store: new BatchingEventStore(given.store) };
  const app = Fastify({
    logger: false,
    ...options,
    genReqId: () => crypto.randomUUID(),
    // Room for any id a client may send: ids the service never issued are 404 `Video not found`.
    routerOptions: { maxParamLength: MAX_ID_LENGTH, ...options.routerOptions },
    frameworkErrors: frameworkErrors(() => gate, API_PREFIX),
    clientErrorHandler,
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.server.on('checkExpectation', refuseExpectation);
  const ajv = validators();
  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? ajv.body : ajv.other).compile(schema));
  registerErrorHandling(app);
  acceptEmptyJsonBodies(app);
  app.addHook('preValidation', refuseUnstorableText(['body']));

  await app.register(swagger, {
    openapi: {
      ...referenceDocument(API_PREFIX),
      components: { securitySchemes: { apiKey: { type: 'apiKey', name: 'X-API-Key', in: 'header' } } },
      security: [{ apiKey: [] }],
    },
  });
  // Outside the API's routes, like the document it shows: reading the reference needs no key.
  await registerDocs(app, `${API_PREFIX}/docs`);

  const health = { config: { public: true }, schema: { hide: true, response: { 200: Health, 503: Health } } };
  const checkHealth = healthHandler(deps.isReady, deps.pool);
  app.get('/health', health, checkHealth);
  const { metrics } = deps;
  if (metrics) {
    app.addHook('onResponse', async (request, reply) => {
      // The route's pattern, not the URL: ids must not explode the label set.
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.httpRequests.observe({ method: request.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    });
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) =>
      reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
  }

  const redis = deps.redisUrl ? rateLimitRedis(app, deps.redisUrl) : null;
  await app.register(
    async (api) => {
      const barrier = new ReadBarrier(deps.pool, deps.watcher);
      const keyUsage = deps.keyUsage;
      const guard = await registerAuth(api, {
        keys: new KeyCache(deps.pool),
        barrier,
        redis,
        failedAuthLimit: deps.failedAuthLimit ?? 100,
        onAuthenticated: keyUsage ? (keyId) => keyUsage.count(keyId) : undefined,
      });
      gate = guard;
      // Every answer of a route that needs a key carries the rate-limit headers (auth.ts): said
      // so in the reference, beside the headers a route describes itself.
      api.addHook('onRoute', (route) => {
        const responses = route.schema?.response as Record<string, { headers?: object }> | undefined;
        if (route.config?.public || !responses) return;
        const withHeaders = Object.entries(responses).map(([status, schema]) => [status, { ...schema, headers: { ...RATE_LIMIT_HEADERS, ...schema.headers } }]);
        route.schema = { ...route.schema, response: Object.fromEntries(withHeaders) };
      });
      // Unknown paths under the API count against the caller's limit like any request (auth.ts).
      api.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));
      api.get('/health', health, checkHealth);
      api.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => app.swagger());
      // One page of the projector, one read of an organization's usage (read-cache.ts).
      const usage = new UsageReads(deps.pool);
      await api.register(videoRoutes(deps, usage));
      await api.register(usageRoutes(deps, usage));
      if (deps.webhooks) await api.register(webhookRoutes(deps, deps.webhooks));
      await api.register(alertRoutes(deps));
    },
    { prefix: API_PREFIX },
  );
  const { dashboard } = deps;
  if (dashboard) await app.register(async (pages) => dashboardPlugin(pages, deps, dashboard));
  if (deps.keyUsage) {
    const keyUsage = deps.keyUsage;
    keyUsage.start();
    // The last counts reach the table when the API stops.
    app.addHook('onClose', () => keyUsage.stop());
  }
  return app;
}

/**
 * The rate limits' shared store. Settings as @fastify/rate-limit advises for ioredis: a
 * request must not hang on a Redis that does not answer (the plugin then lets it through).
 */
function rateLimitRedis(app: FastifyInstance, url: string): Redis {
  const redis = new Redis(url, { connectTimeout: 500, maxRetriesPerRequest: 1, commandTimeout: 500 });
  let warned = 0;
  redis.on('error', (err) => {
    // ioredis reconnects by itself; one line a minute is enough to say it is down.
    if (Date.now() - warned < 60_000) return;
    warned = Date.now();
    app.log.warn({ err }, 'rate-limit store (Redis) unreachable: requests are not limited meanwhile');
  });
  app.addHook('onClose', async () => void (await redis.quit().catch(() => redis.disconnect())));
  return redis;
}
