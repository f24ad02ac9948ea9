// Every error leaves in the spec's shape: { error, details? }. Validation problems are
// 400 `Invalid request` with one { field, message } per field. Nothing a client sends
// becomes a 500: unexpected failures (a database outage) answer 503 and are logged.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ConnectionError, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WrongExpectedRevision } from '../eventstore/port.ts';
import type { Gate } from './auth.ts';

export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    readonly body: { error: string; [extra: string]: unknown },
  ) {
    super(body.error);
  }
}

export function invalidRequest(details: Array<{ field: string; message: string }>): HttpError {
  return new HttpError(400, { error: 'Invalid request', details });
}

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

function fieldOf(error: AjvError, part: string | undefined): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'required') return path ? `${path}.${String(error.params.missingProperty)}` : String(error.params.missingProperty);
  return path || (part === 'body' ? 'body' : part ?? 'request');
}

function messageOf(error: AjvError, field: string): string {
  switch (error.keyword) {
    case 'required':
      return `${field} is required`;
    case 'enum':
      return `${field} must be one of: ${(error.params.allowedValues as string[]).join(', ')}`;
    case 'type':
      return `${field} must be ${error.params.type === 'integer' ? 'an integer' : `of type ${String(error.params.type)}`}`;
    default:
      return `${field} ${error.message ?? 'is invalid'}`;
  }
}

/** One detail per field: the first complaint is the useful one. */
export function validationDetails(errors: AjvError[], part: string | undefined): Array<{ field: string; message: string }> {
  const first = new Map<string, AjvError>();
  // A union of literals fails with one `const` error per literal: together, the values allowed.
  const allowed = new Map<string, unknown[]>();
  for (const error of errors) {
    const field = fieldOf(error, part);
    if (!first.has(field)) first.set(field, error);
    if (error.keyword === 'const') allowed.set(field, [...(allowed.get(field) ?? []), error.params.allowedValue]);
  }
  return [...first].map(([field, error]) => ({
    field,
    message: error.keyword === 'const' ? `${field} must be one of: ${allowed.get(field)!.join(', ')}` : messageOf(error, field),
  }));
}

const BODY_ERRORS: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'body is empty; send a JSON object',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type must be application/json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  // 413 is not a status of the spec: an oversized body is a bad request like any other.
  FST_ERR_CTP_BODY_TOO_LARGE: 'body is too large',
};

/**
 * Fastify answers URLs it cannot route (bad percent-encoding, an overlong path segment)
 * before any hook or error handler runs, in its own shape; this keeps them in the spec's, and
 * passes them through `gate` first (authentication and rate limit, as a route would). Under
 * `apiPrefix`, a request without a valid key is 401 before its URL is looked at, as on every
 * route of the API (spec §5.6).
 */
export function frameworkErrors(gate: () => Gate | null, apiPrefix: string) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const message = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment of the URL is too long' : 'the URL is not valid (bad percent-encoding)';
    const answer = () =>
      !request.caller && request.url.startsWith(`${apiPrefix}/`)
        ? reply.code(401).send({ error: 'API key required' })
        : reply.code(400).send({ error: 'Invalid request', details: [{ field: 'url', message }] });
    const run = gate();
    if (!run) return void answer();
    run(request, reply)
      .then(answer, (failure: unknown) => {
        if (failure instanceof HttpError) return reply.code(failure.statusCode).send(failure.body);
        request.log.error({ err: failure }, 'request failed');
        return reply.code(503).send({ error: 'Service temporarily unavailable' });
      })
      // Nothing is left to answer with (the reply went out, the socket closed): only said.
      .catch((failure: unknown) => request.log.error({ err: failure }, 'answering a URL the router refused failed'));
  };
}

/**
 * Requests Node's HTTP parser refuses (a malformed request line or header, Content-Length
 * beside Transfer-Encoding, headers over Node's size limit) reach no route, hook or error
 * handler: they are answered here on the socket, as a 400 like the body errors above (431 and
 * 408 are not statuses of the spec), and the connection is closed, since what follows on it
 * cannot be read. No key is looked at and nothing is counted: no request was read to do so.
 */
export function clientErrorHandler(error: ConnectionError & { reason?: string }, socket: Socket): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [field, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? ['headers', 'the request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['request', 'the request did not arrive in time']
        : ['request', `the request is not valid HTTP${error.reason ? ` (${error.reason})` : ''}`];
  const body = JSON.stringify({ error: 'Invalid request', details: [{ field, message }] });
  if (socket.writable) {
    socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

/**
 * Node answers an Expect header other than `100-continue` with its own bodiless 417 unless
 * the server has a `checkExpectation` listener: this is that listener, answering the spec's 400.
 */
export function refuseExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const body = JSON.stringify({ error: 'Invalid request', details: [{ field: 'Expect', message: 'Expect must be 100-continue, or absent' }] });
  response.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof HttpError) return reply.code(error.statusCode).send(error.body);
    // A command's stream kept changing under it, written by other processes, until its attempts
    // ran out (commands/handle.ts): nothing was written, and the same request may pass later.
    if (error instanceof WrongExpectedRevision) return reply.code(409).send({ error: 'Conflicting concurrent change, retry' });
    if (error.validation) {
      return reply.code(400).send({ error: 'Invalid request', details: validationDetails(error.validation as AjvError[], error.validationContext) });
    }
    if (error.code && BODY_ERRORS[error.code]) {
      return reply.code(400).send({ error: 'Invalid request', details: [{ field: 'body', message: BODY_ERRORS[error.code]! }] });
    }
    // Any other client error Fastify raises (a malformed header, say) still leaves as the spec's 400.
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.code(400).send({ error: 'Invalid request', details: [{ field: 'request', message: error.message }] });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(503).send({ error: 'Service temporarily unavailable' });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));
}
