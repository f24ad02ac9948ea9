// The organization's dashboard, served by the API role at `/` beside the REST API: sessions
// (cookie + server-side row), CSRF on every POST, security headers and a CSP that allows
// only our own files, sign-in limited per address and per account, then the pages.
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { awaitProjection, type ApiDeps } from '../api/context.ts';
import { refuseUnstorableText } from '../api/storable-input.ts';
import { joinMember } from '../commands/member-commands.ts';
import { DomainError } from '../domain/errors.ts';
import { isEmail, normalizeEmail } from '../domain/members.ts';
import { oneAtATime } from '../one-at-a-time.ts';
import { dashboardCommands, type DashboardOptions } from './commands.ts';
import { formField } from './form.ts';
import { Html } from './pages/html.ts';
import { decodeShownOnce, encodeShownOnce } from './pages/shown-once.ts';
import { expiredFormPage, invalidInvitePage, invitePage, loginPage, registerPages, tooManyRequestsPage, type SignedIn } from './pages/index.ts';
import { DUMMY_HASH, hashPassword, passwordProblem, verifyPassword } from './passwords.ts';
import { plainHttpProblem, secureFor } from './plain-http.ts';
import { credentialsByEmail, invitationByToken, savePasswordOfInvited, type Credentials } from './reads.ts';
import { SESSION_COOKIE, Sessions } from './sessions.ts';
import { SignInThrottle } from './sign-in-throttle.ts';

declare module 'fastify' {
  interface FastifyRequest {
    member: SignedIn | null;
  }
}

/**
 * The member whose password this is: with the address in several organizations, the first
 * (oldest membership) whose password matches. An unknown address costs the same scrypt as a
 * wrong password: no way to tell them apart.
 */
async function signedInMember(candidates: readonly Credentials[], password: string): Promise<Credentials | null> {
  const withPassword = candidates.filter((c) => c.passwordHash !== null);
  if (withPassword.length === 0) {
    await verifyPassword(password, DUMMY_HASH);
    return null;
  }
  for (const candidate of withPassword) if (await verifyPassword(password, candidate.passwordHash!)) return candidate;
  return null;
}

export async function dashboardPlugin(app: FastifyInstance, deps: ApiDeps, options: DashboardOptions): Promise<void> {
  // Pages are not part of the REST API's OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  const html = (reply: FastifyReply) => reply.header('cache-control', 'no-store').type('text/html; charset=utf-8');
  // The refusals people meet here are pages, not the API's JSON (whose handler, api/errors.ts,
  // gets every other error of this scope, unchanged): the per-address sign-in limit is a 429
  // beside the Retry-After @fastify/rate-limit has set, a CSRF refusal a 403 asking to reload.
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error.statusCode === 429) {
      const retryAfter = Number(reply.getHeader('retry-after'));
      const known = Number.isInteger(retryAfter) && retryAfter > 0;
      // The sign-in limit's window, should the plugin not have said.
      if (!known) reply.header('retry-after', 60);
      return html(reply).code(429).send(tooManyRequestsPage(known ? retryAfter : null));
    }
    if (error.code === 'FST_CSRF_INVALID_TOKEN' || error.code === 'FST_CSRF_MISSING_SECRET') return html(reply).code(403).send(expiredFormPage());
    throw error;
  });
  const sessions = new Sessions(deps.pool, options.wall);
  const throttle = new SignInThrottle(options.wall);
  // Passwords are set one at a time per address: two invitations accepted at once cannot both
  // take the same password (each sees the other's once it is in).
  const settingPassword = oneAtATime();
  await app.register(formbody, { bodyLimit: 256 * 1024 });
  await app.register(cookie);
  await app.register(csrf, { sessionPlugin: '@fastify/cookie', cookieOpts: { httpOnly: true, sameSite: 'lax', path: '/', secure: 'auto', signed: false } });
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
  });
  await app.register(rateLimit, { global: false });

  // Bodies are checked for every route (api/app.ts); a page's query (a search) and its path's
  // ids reach SQL too.
  app.addHook('preValidation', refuseUnstorableText(['query', 'params']));
  app.decorateRequest('member', null);
  app.addHook('onRequest', async (request) => {
    if (request.url.startsWith('/assets/')) return;
    request.member = await sessions.lookup(request.cookies[SESSION_COOKIE]);
  });
  // Every state-changing request carries the token of a page we served (the login form too).
  app.addHook('preHandler', (request, reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') return done();
    app.csrfProtection(request, reply, done);
  });

  const csrfField = (reply: FastifyReply) => `<input type="hidden" name="_csrf" value="${reply.generateCsrf()}">`;
  const setSession = (request: FastifyRequest, reply: FastifyReply, id: string) =>
    reply.setCookie(SESSION_COOKIE, id, { httpOnly: true, sameSite: 'lax', path: '/', secure: secureFor(request) });

  app.post('/login', { config: { rateLimit: { max: 20, timeWindow: 60_000, keyGenerator: (r: FastifyRequest) => `sign-in:${r.ip}` } } }, async (request, reply) => {
    const email = formField(request.body, 'email').trim();
    const password = formField(request.body, 'password');
    const again = (error: string, status: number) => html(reply).code(status).send(loginPage({ csrf: new Html(csrfField(reply)), error, email }));
    const plainHttp = plainHttpProblem(request);
    if (plainHttp) return again(plainHttp, 403);
    // No member has an address that is not one (invitations refuse them): refused before the
    // throttle keeps it, which would hold up to a whole body's worth of text per attempt.
    if (!isEmail(normalizeEmail(email))) return again('Enter a valid e-mail address.', 400);
    // Counted before the password is checked: attempts sent at once get no more checks than these.
    if (!throttle.attempt(email)) {
      reply.header('retry-after', throttle.secondsLeft(email));
      return again('Too many sign-in attempts for this account: wait a few minutes.', 429);
    }
    const found = await signedInMember(await credentialsByEmail(deps.pool, email), password);
    if (!found) return again('Wrong e-mail or password.', 401);
    throttle.succeeded(email);
    await sessions.end(request.cookies[SESSION_COOKIE]);
    setSession(request, reply, await sessions.start(found.memberId));
    return reply.redirect('/', 303);
  });

  app.post('/logout', async (request, reply) => {
    await sessions.end(request.cookies[SESSION_COOKIE]);
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/login', 303);
  });

  app.get<{ Params: { token: string } }>('/invite/:token', async (request, reply) => {
    const invitation = await invitationByToken(deps.pool, request.params.token);
    if (!invitation || invitation.status !== 'invited' || invitation.expiresAt.getTime() <= options.wall.now().getTime()) {
      return html(reply).code(410).send(invalidInvitePage());
    }
    const error = plainHttpProblem(request) ?? undefined;
    return html(reply).send(invitePage({ csrf: new Html(csrfField(reply)), token: request.params.token, email: invitation.email, error }));
  });

  app.post<{ Params: { token: string } }>('/invite/:token', async (request, reply) => {
    const { token } = request.params;
    const invitation = await invitationByToken(deps.pool, token);
    // Expired is refused here too: a link that can no longer be used checks no password.
    if (!invitation || invitation.status !== 'invited' || invitation.expiresAt.getTime() <= options.wall.now().getTime()) {
      return html(reply).code(410).send(invalidInvitePage());
    }
    const password = formField(request.body, 'password');
    const again = (error: string, status: number) => html(reply).code(status).send(invitePage({ csrf: new Html(csrfField(reply)), token, email: invitation.email, error }));
    // Refused before the invitation is used: a member whose browser drops the cookie could not sign in either.
    const plainHttp = plainHttpProblem(request);
    if (plainHttp) return again(plainHttp, 403);
    const problem = passwordProblem(password, formField(request.body, 'confirm'));
    if (problem) return again(problem, 400);
    const outcome = await settingPassword(invitation.email, async () => {
      // An address and a password name one membership (sign-in). Comparing with the address's
      // other passwords is an attempt at them: counted by the sign-in throttle, so a link in
      // hand is no way around it.
      if (!throttle.attempt(invitation.email)) return 'throttled' as const;
      const others = (await credentialsByEmail(deps.pool, invitation.email)).filter((c) => c.memberId !== invitation.memberId);
      // Sign-in takes the first membership whose password matches: a password that already
      // opens another would leave this one unreachable. No other password costs a scrypt too.
      if ((await signedInMember(others, password)) !== null) return 'in use' as const;
      try {
        // The password first, then the join (the invitation's one use, decided in the log): a
        // failure between the two leaves the invitation unused, to be accepted again, and not
        // a member without a password.
        if (!(await savePasswordOfInvited(deps.pool, invitation.memberId, await hashPassword(password)))) return 'invalid' as const;
        const joined = await joinMember(deps.store, deps.clock, options.wall, { orgId: invitation.orgId, memberId: invitation.memberId, token });
        await awaitProjection(deps, joined.position);
        return 'joined' as const;
      } catch (error) {
        if (error instanceof DomainError) return 'invalid' as const;
        throw error;
      }
    });
    if (outcome === 'throttled') {
      reply.header('retry-after', throttle.secondsLeft(invitation.email));
      return again('Too many password attempts for this account: wait a few minutes.', 429);
    }
    if (outcome === 'in use') {
      return again('This password already signs you in to another organization: choose a different one, so that each password opens its own organization.', 400);
    }
    if (outcome === 'invalid') return html(reply).code(410).send(invalidInvitePage());
    // Joined: signed in with the password just chosen, as a right password at sign-in is.
    throttle.succeeded(invitation.email);
    await sessions.end(request.cookies[SESSION_COOKIE]);
    setSession(request, reply, await sessions.start(invitation.memberId));
    return reply.redirect('/', 303);
  });

  registerPages(
    app,
    deps,
    {
      signedIn: (request) => request.member,
      csrfField: (_request, reply) => csrfField(reply),
      plainHttpProblem,
      // Pages hold only for a signed-in request: its cookie is a live session's id.
      holdShownOnce: (request, path, notice) => sessions.holdShownOnce(request.cookies[SESSION_COOKIE]!, path, encodeShownOnce(notice)),
      // Fastify answers HEAD with the GET handler: a HEAD (a link checker, a prefetch) has no
      // body to show the notice in, so it leaves it for the GET.
      takeShownOnce: async (request, path) =>
        request.method === 'HEAD' ? null : decodeShownOnce(await sessions.takeShownOnce(request.cookies[SESSION_COOKIE], path)),
    },
    dashboardCommands(deps, options, sessions),
  );
}
