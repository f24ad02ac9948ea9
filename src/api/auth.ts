// Authentication and rate limits. Order matters and is Fastify's hook order:
//   1. onRequest (app level): read the read models' version (read-barrier.ts), then resolve
//      X-API-Key to a key (or none) as of that version; never answers.
//   2. onRequest (app level, counted in @fastify/rate-limit's store): count the request against
//      the key, or against the client address when there is no valid key (failed authentications).
//   3. preParsing: answer 401 when there is no valid key, before a body is even read.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { hashApiKey, hasKeyShape } from '../domain/api-key.ts';
import type { KeyMode, Plan } from '../domain/platform.ts';
import { HttpError } from './errors.ts';
import type { KeyCache } from './key-cache.ts';
import type { ReadBarrier, ReadView } from './read-barrier.ts';

export interface Caller {
  keyId: string;
  orgId: string;
  mode: KeyMode;
  plan: Plan;
  rateLimit: number | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
    /** The read models as of this request's arrival (null for requests without a key of the right shape). */
    view: ReadView | null;
  }
  interface FastifyContextConfig {
    /** Routes anyone may call without a key (health, OpenAPI document). */
    public?: boolean;
  }
}

export const PLAN_LIMITS: Record<Plan, number> = { free: 60, pro: 300, enterprise: 1000 };

export function limitOf(caller: Caller): number {
  return caller.rateLimit ?? PLAN_LIMITS[caller.plan];
}

export interface AuthOptions {
  keys: KeyCache;
  barrier: ReadBarrier;
  /** Requests per minute from one address without a valid key. */
  failedAuthLimit: number;
  /**
   * Where request counts are kept: one Redis for every API replica (so N replicas do not give
   * a key N times its limit), or this process's memory when null.
   */
  redis: Redis | null;
  /** Told of every request a valid key makes. */
  onAuthenticated?: (keyId: string) => void;
}

/**
 * Authenticates and counts a request the way the hooks below do, for a URL the router refused
 * (answered before any hook runs): it carries the X-RateLimit-* headers too, and counts.
 * Throws the 429 when the limit is exceeded.
 */
export type Gate = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

export async function registerAuth(app: FastifyInstance, options: AuthOptions): Promise<Gate> {
  app.decorateRequest('caller', null);
  app.decorateRequest('view', null);

  const authenticate = async (request: FastifyRequest) => {
    if (request.routeOptions.config?.public) return;
    const apiKey = keyOf(request);
    if (!apiKey) return;
    request.view = await options.barrier.sync();
    request.caller = await resolveCaller(apiKey, options.keys, request.view);
    if (request.caller) options.onAuthenticated?.(request.caller.keyId);
  };
  app.addHook('onRequest', authenticate);

  await app.register(rateLimit, {
    // Counted by the hook below rather than by the plugin's own per-route hooks, which give the
    // reset only in whole seconds: X-RateLimit-Reset is computed here from the exact time left.
    global: false,
    timeWindow: 60_000,
    ...(options.redis ? { redis: options.redis, nameSpace: 'vidtrack-rate-limit-' } : {}),
    // A Redis outage must not take the API down with it: requests go on, unlimited, meanwhile.
    skipOnError: true,
    // The in-memory store keeps this many keys and addresses, least recently counted out first
    // (the plugin's default, 5,000): a busy minute with more callers would forget a limited
    // one's count.
    cache: 100_000,
    keyGenerator: (request) => (request.caller ? `key:${request.caller.keyId}` : `ip:${request.ip}`),
    max: async (request) => (request.caller ? limitOf(request.caller) : options.failedAuthLimit),
    allowList: (request) => Boolean(request.routeOptions.config?.public),
  });
  const count = app.createRateLimit();
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    const counted = await count(request);
    if (counted.isAllowed) return;
    // The spec's Unix time of the window's end, rounded up: a client that waits until then is
    // not refused again. Header and 429 body are this one value.
    const reset = Math.ceil((Date.now() + counted.ttl) / 1000);
    reply.header('x-ratelimit-limit', counted.max).header('x-ratelimit-remaining', counted.remaining).header('x-ratelimit-reset', reset);
    if (!counted.isExceeded) return;
    reply.header('retry-after', counted.ttlInSeconds);
    throw new HttpError(429, { error: 'Rate limit exceeded', limit: counted.max, reset });
  };
  // In this scope, so unknown paths (the not-found handler inherits it) are counted too.
  app.addHook('onRequest', limit);

  app.addHook('preParsing', async (request) => {
    if (!request.routeOptions.config.public && !request.caller) throw new HttpError(401, { error: 'API key required' });
  });

  // For a URL the router refused, which has been through none of the hooks above.
  return async (request, reply) => {
    await authenticate(request);
    await limit(request, reply);
  };
}

function keyOf(request: FastifyRequest): string | null {
  const header = request.headers['x-api-key'];
  const apiKey = Array.isArray(header) ? header[0] : header;
  return apiKey && hasKeyShape(apiKey) ? apiKey : null;
}

async function resolveCaller(apiKey: string, keys: KeyCache, view: ReadView): Promise<Caller | null> {
  const key = await keys.lookup(hashApiKey(apiKey), view.revokedKeys);
  if (!key || key.revoked || !apiKey.startsWith(`vt_${key.mode}_`)) return null;
  return { keyId: key.keyId, orgId: key.orgId, mode: key.mode, plan: key.plan, rateLimit: key.rateLimit };
}
