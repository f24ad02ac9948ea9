// Text that PostgreSQL cannot hold (NUL, an unpaired UTF-16 surrogate; domain/storable.ts) is
// refused where it arrives, with a 400 naming the field. Left to go on, it reaches a statement or
// an append, whose refusal is an error the client did not see coming: a 503 it would retry.
import type { FastifyRequest } from 'fastify';
import { unstorableTextPath } from '../domain/storable.ts';
import { invalidRequest } from './errors.ts';

type Part = 'body' | 'query' | 'params';

/** A preValidation hook refusing such text anywhere in the given parts of a request, keys included. */
export function refuseUnstorableText(parts: readonly Part[]) {
  return async (request: FastifyRequest): Promise<void> => {
    for (const part of parts) {
      const path = unstorableTextPath(request[part]);
      if (path !== null) {
        const field = path || part;
        throw invalidRequest([{ field, message: `${field} contains NUL or an unpaired UTF-16 surrogate, which cannot be stored` }]);
      }
    }
  };
}
