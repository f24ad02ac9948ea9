// GET /health, for a supervisor or a load balancer: 200 once every part of the process is ready
// and its database answers. Without the database every request but this one fails, and a
// health that said ok hid it from whatever restarts the service.
import type { FastifyReply } from 'fastify';
import type { Pool } from 'pg';

/** A database that has not answered in this long is as good as gone, for a health check. */
const DATABASE_DEADLINE_MS = 2_000;

export type Health = { code: 200 | 503; body: { status: 'ok' | 'starting' | 'database unavailable' } };

export async function healthOf(isReady: () => boolean, pool: Pool): Promise<Health> {
  if (!isReady()) return { code: 503, body: { status: 'starting' } };
  let timer: NodeJS.Timeout | undefined;
  const answered = await Promise.race([
    pool.query('SELECT 1').then(() => true, () => false),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), DATABASE_DEADLINE_MS))),
  ]).finally(() => clearTimeout(timer));
  return answered ? { code: 200, body: { status: 'ok' } } : { code: 503, body: { status: 'database unavailable' } };
}

/** The route's handler, for the API and for the metrics server of a role without it. */
export function healthHandler(isReady: () => boolean, pool: Pool) {
  return async (_request: unknown, reply: FastifyReply) => {
    const { code, body } = await healthOf(isReady, pool);
    return reply.code(code).send(body);
  };
}
