// Whether the session cookie is Secure, and when a browser would drop it. It is Secure except
// over plain http on a loopback address (a developer's own machine): never sent in clear by
// default. A browser on plain http elsewhere (a LAN address, say) drops a Secure cookie, so a
// sign-in there would lead straight back to the sign-in page without a word: the sign-in and
// invitation pages say why instead, and refuse to sign in or use up the invitation.
import type { FastifyRequest } from 'fastify';

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/;

/** Secure cookies, except over plain http on a loopback address. */
export function secureFor(request: FastifyRequest): boolean {
  return request.protocol === 'https' || !LOOPBACK.test(request.hostname);
}

/**
 * The scheme the browser is on: as a POST's Origin names it; else as a proxy's
 * X-Forwarded-Proto does (believed here even when TRUST_PROXY trusts no proxy: this only chooses
 * whether a page explains itself, never whether a cookie is Secure); else the connection's own.
 */
function browserScheme(request: FastifyRequest): string {
  const { origin } = request.headers;
  if (origin && URL.canParse(origin)) return new URL(origin).protocol.replace(/:$/, '');
  const forwarded = request.headers['x-forwarded-proto'];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase();
  return first || request.protocol;
}

/** Why this browser could not keep a session here, or null. */
export function plainHttpProblem(request: FastifyRequest): string | null {
  if (!secureFor(request) || browserScheme(request) !== 'http') return null;
  return (
    'This dashboard is reached over plain http, and its session cookie is only sent over https: your browser would not keep it, so signing in cannot work here. ' +
    'Serve the dashboard over https (for example behind a proxy that terminates TLS); plain http works only at localhost or 127.0.0.1, on the machine that runs it.'
  );
}
