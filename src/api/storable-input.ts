// Text that PostgreSQL cannot hold (NUL, an unpaired UTF-16 surrogate; domain/storable.ts) is
// refused where it arrives, with a 400 naming the field. Left to go on, it reaches a statement or
// an append, whose refusal is an error the client did not see coming: a 503 it would retry.
import type { FastifyRequest } from 'fastify';
import { hasUnstorableCharacters } from '../domain/storable.ts';
import { invalidRequest } from './errors.ts';

type Part = 'body' | 'query' | 'params';

/** A preValidation hook refusing such text anywhere in the given parts of a request, keys included. */
export function refuseUnstorableText(parts: readonly Part[]) {
  return async (request: FastifyRequest): Promise<void> => {
    for (const part of parts) {
      const field = unstorableField(request[part], part);
      if (field !== null) {
        throw invalidRequest([{ field, message: `${field} contains NUL or an unpaired UTF-16 surrogate, which cannot be stored` }]);
      }
    }
  };
}

/**
 * The path of the first string (value or key) holding such text, e.g. `events.0`; the part's own
 * name for the part itself. Walked with a stack, not recursion: a body may nest deeper than the
 * call stack goes.
 */
function unstorableField(value: unknown, part: Part): string | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: '' }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value: item, path } = next;
    if (typeof item === 'string') {
      if (hasUnstorableCharacters(item)) return path || part;
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        const childPath = path ? `${path}.${key}` : key;
        if (hasUnstorableCharacters(key)) return childPath;
        pending.push({ value: child, path: childPath });
      }
    }
  }
  return null;
}
