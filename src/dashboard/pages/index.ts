// The dashboard's pages, registered by the dashboard plugin (src/dashboard) inside its session,
// CSRF and security-header context: every POST here is checked there. Pages call the same
// commands and read the same read models as the REST API.
import { createRequire } from 'node:module';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { awaitProjection, type ApiDeps } from '../../api/context.ts';
import { POSSIBLE_ID } from '../../api/schemas.ts';
import { formField, formList, formMode } from '../form.ts';
import { csvDisposition, snapshotsCsv } from '../../api/snapshots-csv.ts';
import { stopVideo } from '../../commands/video-commands.ts';
import { DomainError } from '../../domain/errors.ts';
import { readSnapshots, readVideo, type VideoRow } from '../../../projections/queries.ts';
import { loginPage } from './auth-pages.ts';
import { billingCsv, billingPage } from './billing.ts';
import { html, Html } from './html.ts';
import { keysPage, type KeysView } from './keys.ts';
import { notice, page, type Section, type Viewer } from './layout.ts';
import { when } from './format.ts';
import { accountLedger } from './ledger.ts';
import { membersPage, type MembersView } from './members.ts';
import type { DashboardCommands, PageAuth, SignedIn } from './model.ts';
import { overviewPage } from './overview.ts';
import type { ShownOnce } from './shown-once.ts';
import { filtersOf, trackLines, videosPage, type TrackForm } from './videos.ts';
import { videoPage } from './video.ts';
import { webhookPage, webhooksPage, type WebhookEditForm, type WebhookForm, type WebhookView, type WebhooksView } from './webhooks.ts';
import { MAX_DESCRIPTION_LENGTH, MAX_URL_LENGTH } from '../../domain/webhooks.ts';

export type { DashboardCommands, KeyListing, MemberListing, PageAuth, SignedIn } from './model.ts';
export { expiredFormPage, invalidInvitePage, invitePage, loginPage, tooManyRequestsPage } from './auth-pages.ts';


export function registerPages(app: FastifyInstance, deps: ApiDeps, auth: PageAuth, commands: DashboardCommands): void {
  const uplotDir = path.dirname(createRequire(import.meta.url).resolve('uplot/dist/uPlot.iife.min.js'));
  app.register(fastifyStatic, { root: path.join(import.meta.dirname, '../assets'), prefix: '/assets/', decorateReply: false, index: false });
  app.register(fastifyStatic, { root: uplotDir, prefix: '/assets/uplot/', decorateReply: false, index: false, allowedPath: (p) => /^\/?uPlot\.(iife\.min\.js|min\.css)$/.test(p) });

  /** The signed-in member and how pages greet them; null after sending the way to sign in. */
  async function viewerOf(request: FastifyRequest, reply: FastifyReply): Promise<{ me: SignedIn; viewer: Viewer } | null> {
    const me = auth.signedIn(request);
    if (!me) {
      await reply.redirect('/login', 303);
      return null;
    }
    // Pages show keys and balances: never kept by a browser or proxy cache.
    reply.header('cache-control', 'no-store').type('text/html; charset=utf-8');
    return { me, viewer: { email: me.email, role: me.role, orgName: await commands.orgName(me.orgId), csrf: new Html(auth.csrfField(request, reply)) } };
  }

  /**
   * Post/Redirect/Get: a form's POST that changed something answers 303 to the page `to`,
   * which shows `notice` once (its session holds it for that page); a reload of that page
   * sends no form again.
   */
  async function redirectShowing(request: FastifyRequest, reply: FastifyReply, to: string, notice: ShownOnce): Promise<FastifyReply> {
    await auth.holdShownOnce(request, new URL(to, 'http://page').pathname, notice);
    return reply.redirect(to, 303);
  }

  function notFound(reply: FastifyReply, viewer: Viewer, section: Section = 'videos'): FastifyReply {
    return reply.code(404).send(page(viewer, section, 'Not found', html`<p>There is nothing here, or it belongs to another organization.</p><p><a href="/">Back to the overview</a></p>`));
  }

  /** The member's own video, or null (another organization's is as absent as a missing one). */
  async function ownVideo(me: SignedIn, id: string): Promise<VideoRow | null> {
    const video = POSSIBLE_ID.test(id) ? await readVideo(deps.pool, id) : null;
    return video && video.org_id === me.orgId ? video : null;
  }

  app.get('/login', async (request, reply) => {
    if (auth.signedIn(request)) return reply.redirect('/', 303);
    return reply.header('cache-control', 'no-store').type('text/html; charset=utf-8').send(loginPage({ csrf: new Html(auth.csrfField(request, reply)), error: auth.plainHttpProblem(request) ?? undefined }));
  });

  app.get('/', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    return reply.send(await overviewPage(deps, seen.viewer, seen.me.orgId));
  });

  // ---- keys
  const showKeys = async (reply: FastifyReply, seen: { me: SignedIn; viewer: Viewer }, view: Omit<KeysView, 'keys'> = {}, status = 200) =>
    reply.code(status).send(keysPage(seen.viewer, { ...view, keys: await commands.listKeys(seen.me.orgId) }));

  // A new key's value is shown by the page its form redirects to, once: a reload of that page
  // creates no key and shows the value no more (its session held it for one read).
  app.get('/keys', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const held = await auth.takeShownOnce(request, '/keys');
    return showKeys(reply, seen, held?.kind === 'key-created' ? { created: { name: held.name, apiKey: held.apiKey } } : held?.kind === 'done' ? { done: held.text } : {});
  });

  app.post('/keys', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const name = formField(request.body, 'name').trim();
    const mode = formMode(request.body);
    const form = { name, mode: mode ?? 'live' };
    if (name.length === 0 || name.length > 100) return showKeys(reply, seen, { form, error: 'Name must be 1 to 100 characters.' }, 400);
    if (!mode) return showKeys(reply, seen, { form, error: 'Choose Live or Test.' }, 400);
    const created = await commands.createKey(seen.me.orgId, { name, mode, by: seen.me });
    return redirectShowing(request, reply, '/keys', { kind: 'key-created', name, apiKey: created.apiKey });
  });

  app.post<{ Params: { id: string } }>('/keys/:id/delete', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const outcome = POSSIBLE_ID.test(request.params.id) ? await commands.deleteKey(seen.me.orgId, request.params.id, seen.me) : 'not_found';
    if (outcome === 'not_found') return showKeys(reply, seen, { error: 'That key does not exist or was already deleted.' }, 404);
    if (outcome === 'recorded') {
      return redirectShowing(request, reply, '/keys', {
        kind: 'done',
        text: 'The deletion is recorded and takes effect in a moment: until then the key may still be listed below, and requests with it may still be accepted. Reload the page to see it gone.',
      });
    }
    return redirectShowing(request, reply, '/keys', { kind: 'done', text: 'The key was deleted: requests with it are refused from now on.' });
  });

  // ---- videos
  const blankForm = (): TrackForm => ({ links: '', days: '7', mode: 'live' });

  /**
   * The form after a tracking, with each line's result: the lines not tracked (invalid, short
   * of funds, failed) are back in it, to be corrected and sent again; those tracked are not,
   * so pressing Track again does not send them.
   */
  const afterTracking = (held: Extract<ShownOnce, { kind: 'tracked' }>): TrackForm => ({
    links: held.results.filter((r) => r.outcome === 'invalid' || r.outcome === 'insufficient' || r.outcome === 'failed').map((r) => r.line).join('\n'),
    days: held.days,
    mode: held.mode,
    results: held.results,
  });

  app.get<{ Querystring: Record<string, unknown> }>('/videos', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const held = await auth.takeShownOnce(request, '/videos');
    return reply.send(await videosPage(deps, seen.viewer, seen.me.orgId, filtersOf(request.query ?? {}), held?.kind === 'tracked' ? afterTracking(held) : blankForm()));
  });

  app.post('/videos/track', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const mode = formMode(request.body);
    const form: TrackForm = { links: formField(request.body, 'links'), days: formField(request.body, 'days'), mode: mode ?? 'live' };
    // The form's select always sends one of the two: anything else is no reason to track live (billed).
    const done = mode ? await trackLines(deps, { orgId: seen.me.orgId, memberId: seen.me.memberId }, form) : { ...form, error: 'Choose Live or Test.' };
    if (done.error || !done.results) return reply.code(400).send(await videosPage(deps, seen.viewer, seen.me.orgId, { mode: form.mode }, done));
    // The list of the mode just tracked in, as the answer to the POST showed it.
    return redirectShowing(request, reply, form.mode === 'test' ? '/videos?mode=test' : '/videos', { kind: 'tracked', days: form.days, mode: form.mode, results: done.results });
  });

  app.get<{ Params: { id: string } }>('/videos/:id', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const video = await ownVideo(seen.me, request.params.id);
    if (!video) return notFound(reply, seen.viewer);
    return reply.send(videoPage(deps, seen.viewer, video, await readSnapshots(deps.pool, video.video_id)));
  });

  app.get<{ Params: { id: string } }>('/videos/:id/snapshots.csv', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const video = await ownVideo(seen.me, request.params.id);
    if (!video) return notFound(reply, seen.viewer);
    const csv = snapshotsCsv(video, await readSnapshots(deps.pool, video.video_id));
    return reply.type('text/csv; charset=utf-8').header('content-disposition', csvDisposition(video)).send(csv);
  });

  app.post<{ Params: { id: string } }>('/videos/:id/stop', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const video = await ownVideo(seen.me, request.params.id);
    if (!video) return notFound(reply, seen.viewer);
    try {
      const handled = await stopVideo(deps.store, deps.clock, video.video_id);
      await awaitProjection(deps, handled.position);
    } catch (error) {
      // Already ended (a double submit, or it completed meanwhile): the page shows how it ended.
      if (!(error instanceof DomainError && error.code === 'not_monitoring')) throw error;
    }
    return reply.redirect(`/videos/${encodeURIComponent(video.video_id)}`, 303);
  });

  // ---- billing
  app.get('/billing', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    return reply.send(billingPage(seen.viewer, await accountLedger(deps.store, seen.me.orgId), deps.clock.now()));
  });

  app.get('/billing.csv', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const csv = billingCsv(await accountLedger(deps.store, seen.me.orgId));
    return reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="vidtrack-ledger.csv"').send(csv);
  });


  // ---- webhooks: the REST API's commands and checks (dashboard/commands.ts), both modes
  const showWebhooks = async (reply: FastifyReply, seen: { me: SignedIn; viewer: Viewer }, view: Omit<WebhooksView, 'webhooks'> = {}, status = 200) =>
    reply.code(status).send(webhooksPage(seen.viewer, { ...view, webhooks: await commands.listWebhooks(seen.me.orgId) }));
  const DELIVERIES_SHOWN = 50;
  const showWebhook = async (
    reply: FastifyReply,
    seen: { me: SignedIn; viewer: Viewer },
    id: string,
    view: Pick<WebhookView, 'error' | 'done' | 'edit' | 'since'> = {},
    status = 200,
  ) => {
    const webhook = await commands.readWebhook(seen.me.orgId, id);
    const deliveries = webhook ? await commands.listWebhookDeliveries(seen.me.orgId, id, DELIVERIES_SHOWN) : null;
    if (!webhook || !deliveries) return notFound(reply, seen.viewer, 'webhooks');
    return reply.code(status).send(webhookPage(seen.viewer, { ...view, webhook, deliveries, limit: DELIVERIES_SHOWN, now: deps.clock.now() }));
  };
  const GONE = 'That endpoint does not exist or was already deleted.';
  /** The add and edit forms' fields, trimmed as typed. */
  const endpointFields = (body: unknown): WebhookEditForm => ({
    url: formField(body, 'url').trim(),
    events: formList(body, 'events'),
    description: formField(body, 'description').trim(),
  });
  /**
   * The API's schema limits, said for a form (its body schema answers before any command
   * runs); the rest (scheme, host, addresses, event names, 20 per organization) is the API's
   * own checks, run by the commands.
   */
  const endpointFieldsProblem = (form: WebhookEditForm): string | null => {
    if (form.url.length === 0 || form.url.length > MAX_URL_LENGTH) return `URL must be 1 to ${MAX_URL_LENGTH} characters.`;
    if (form.description.length > MAX_DESCRIPTION_LENGTH) return `Description must be at most ${MAX_DESCRIPTION_LENGTH} characters.`;
    if (form.events.length === 0) return 'Choose at least one event.';
    return null;
  };

  // What the forms of the list redirect here with: a secret (added, rotated), shown once.
  app.get('/webhooks', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const held = await auth.takeShownOnce(request, '/webhooks');
    if (held?.kind === 'webhook-secret') return showWebhooks(reply, seen, { secret: { url: held.url, secret: held.secret, rotated: held.rotated } });
    if (held?.kind === 'webhook-test-sent') {
      return showWebhooks(reply, seen, { done: html`A <code>webhook.test</code> event is on its way: see it among <a href="/webhooks/${encodeURIComponent(held.endpointId)}">the endpoint's deliveries</a>.` });
    }
    return showWebhooks(reply, seen, held?.kind === 'done' ? { done: held.text } : {});
  });

  app.post('/webhooks', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const mode = formMode(request.body);
    const form: WebhookForm = { ...endpointFields(request.body), mode: mode ?? 'live' };
    const problem = endpointFieldsProblem(form) ?? (mode ? null : 'Choose Live or Test.');
    if (problem) return showWebhooks(reply, seen, { form, error: problem }, 400);
    const created = await commands.createWebhook(seen.me.orgId, { url: form.url, events: form.events, description: form.description || null, mode: form.mode });
    if (!created.ok) return showWebhooks(reply, seen, { form, error: created.error }, 400);
    return redirectShowing(request, reply, '/webhooks', { kind: 'webhook-secret', url: form.url, secret: created.secret });
  });

  const webhookPath = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

  app.get<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const held = await auth.takeShownOnce(request, webhookPath(request.params.id));
    const view = held?.kind === 'done' ? { done: held.text } : held?.kind === 'webhook-recovered' ? { done: held.text, since: held.since } : {};
    return showWebhook(reply, seen, request.params.id, view);
  });

  for (const [action, done] of [
    ['enable', 'The endpoint is enabled.'],
    ['disable', 'The endpoint is disabled: nothing is sent to it until it is enabled again.'],
    ['test', 'A webhook.test event is on its way: see it among the deliveries.'],
    ['delete', 'The endpoint was deleted.'],
  ] as const) {
    app.post<{ Params: { id: string } }>(`/webhooks/:id/${action}`, async (request, reply) => {
      const seen = await viewerOf(request, reply);
      if (!seen) return reply;
      const { orgId } = seen.me;
      const id = request.params.id;
      const outcome =
        action === 'enable' || action === 'disable' ? await commands.setWebhookEnabled(orgId, id, action === 'enable')
        : action === 'test' ? await commands.sendWebhookTest(orgId, id)
        : await commands.deleteWebhook(orgId, id);
      if (outcome === 'not_found') return showWebhooks(reply, seen, { error: GONE }, 404);
      if (!outcome.ok) return showWebhooks(reply, seen, { error: outcome.error }, 400);
      return redirectShowing(request, reply, '/webhooks', action === 'test' ? { kind: 'webhook-test-sent', endpointId: id } : { kind: 'done', text: done });
    });
  }

  app.post<{ Params: { id: string } }>('/webhooks/:id/rotate-secret', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const outcome = await commands.rotateWebhookSecret(seen.me.orgId, request.params.id);
    if (outcome === 'not_found') return showWebhooks(reply, seen, { error: GONE }, 404);
    if (!outcome.ok) return showWebhooks(reply, seen, { error: outcome.error }, 400);
    const webhook = await commands.readWebhook(seen.me.orgId, request.params.id);
    return redirectShowing(request, reply, '/webhooks', {
      kind: 'webhook-secret',
      url: webhook?.url ?? request.params.id,
      secret: outcome.secret,
      rotated: { previousExpiresAt: outcome.previousExpiresAt },
    });
  });

  // The API's PATCH of URL, events and description. A refusal shows the API's message above
  // the form, which keeps what was typed; the endpoint stays as it was.
  app.post<{ Params: { id: string } }>('/webhooks/:id/edit', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const id = request.params.id;
    const edit = endpointFields(request.body);
    const problem = endpointFieldsProblem(edit);
    if (problem) return showWebhook(reply, seen, id, { edit, error: problem }, 400);
    const outcome = await commands.updateWebhook(seen.me.orgId, id, { url: edit.url, events: edit.events, description: edit.description || null });
    if (outcome === 'not_found') return notFound(reply, seen.viewer, 'webhooks');
    if (!outcome.ok) return showWebhook(reply, seen, id, { edit, error: outcome.error }, 400);
    return redirectShowing(request, reply, webhookPath(id), { kind: 'done', text: 'The endpoint is saved: from now on, deliveries go to the URL and cover the events shown here.' });
  });

  // The API's recover. The form's datetime-local has no zone and the page says UTC, as every
  // time on the dashboard is: the API's check then sees the instant the member meant.
  app.post<{ Params: { id: string } }>('/webhooks/:id/recover', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const id = request.params.id;
    const since = formField(request.body, 'since').trim();
    const outcome = await commands.recoverWebhookDeliveries(seen.me.orgId, id, `${since}Z`);
    if (outcome === 'not_found') return notFound(reply, seen.viewer, 'webhooks');
    if (!outcome.ok) return showWebhook(reply, seen, id, { since, error: outcome.error }, 400);
    const from = when(`${since}Z`);
    const done =
      outcome.recovered === 0 ? `No delivery to this endpoint has failed since ${from}: nothing was queued again.`
      : `${outcome.recovered} failed ${outcome.recovered === 1 ? 'delivery' : 'deliveries'} since ${from} queued again: each is sent again with its own webhook-id, on a fresh retry schedule.`;
    return redirectShowing(request, reply, webhookPath(id), { kind: 'webhook-recovered', text: done, since });
  });

  app.post<{ Params: { id: string; deliveryId: string } }>('/webhooks/:id/deliveries/:deliveryId/replay', async (request, reply) => {
    const seen = await viewerOf(request, reply);
    if (!seen) return reply;
    const { id, deliveryId } = request.params;
    const outcome = await commands.replayWebhookDelivery(seen.me.orgId, id, deliveryId);
    if (outcome === 'not_found') {
      if (!(await commands.readWebhook(seen.me.orgId, id))) return notFound(reply, seen.viewer, 'webhooks');
      return showWebhook(reply, seen, id, { error: 'That delivery does not exist.' }, 404);
    }
    if (!outcome.ok) return showWebhook(reply, seen, id, { error: outcome.error }, 400);
    return redirectShowing(request, reply, webhookPath(id), { kind: 'done', text: 'The delivery is sent again, with the same webhook-id.' });
  });

  // ---- members (owners)
  async function ownerOf(request: FastifyRequest, reply: FastifyReply) {
    const seen = await viewerOf(request, reply);
    if (!seen) return null;
    if (seen.me.role !== 'owner') {
      await reply.code(403).send(page(seen.viewer, 'overview', 'Owners only', html`${notice('error', 'Only owners of the organization manage its members.')}<p><a href="/">Back to the overview</a></p>`));
      return null;
    }
    return seen;
  }
  const showMembers = async (reply: FastifyReply, seen: { me: SignedIn; viewer: Viewer }, view: Omit<MembersView, 'members'> = {}, status = 200) =>
    reply.code(status).send(membersPage(seen.viewer, seen.me, { ...view, members: await commands.listMembers(seen.me.orgId) }));

  /** How the members page says what its forms did (held for it by the redirect). */
  function membersNotice(held: ShownOnce | null): Omit<MembersView, 'members'> {
    if (held?.kind === 'done') return { done: held.text };
    if (held?.kind !== 'invited') return {};
    const earlier = held.replaced ? ' Their earlier invitation link no longer works.' : '';
    if (!held.mailed) {
      return { error: html`The invitation stands, but its e-mail could not be sent: give ${held.email} this link (it works once, for 7 days): <code class="wrap">${held.inviteUrl}</code>${earlier}` };
    }
    // The link as well: an e-mail accepted for delivery can still be lost or filtered.
    return { done: html`Invitation sent to ${held.email}. Should it not arrive, give them this link (it works once, for 7 days): <code class="wrap">${held.inviteUrl}</code>${earlier}` };
  }

  app.get('/members', async (request, reply) => {
    const seen = await ownerOf(request, reply);
    if (!seen) return reply;
    return showMembers(reply, seen, membersNotice(await auth.takeShownOnce(request, '/members')));
  });

  app.post('/members', async (request, reply) => {
    const seen = await ownerOf(request, reply);
    if (!seen) return reply;
    const email = formField(request.body, 'email').trim();
    const role = formField(request.body, 'role') === 'owner' ? 'owner' : 'member';
    const outcome = await commands.inviteMember(seen.me.orgId, { email, role, by: seen.me });
    if (!outcome.ok) return showMembers(reply, seen, { form: { email, role }, error: outcome.error }, 400);
    // A reload of the page showing the link would otherwise invite again: a second e-mail, and
    // the link just shown replaced.
    return redirectShowing(request, reply, '/members', { kind: 'invited', email, inviteUrl: outcome.inviteUrl, mailed: outcome.mailed, replaced: outcome.replaced });
  });

  app.post<{ Params: { id: string } }>('/members/:id/remove', async (request, reply) => {
    const seen = await ownerOf(request, reply);
    if (!seen) return reply;
    const outcome = await commands.removeMember(seen.me.orgId, request.params.id, seen.me);
    if (!outcome.ok) return showMembers(reply, seen, { error: outcome.error }, 400);
    return redirectShowing(request, reply, '/members', { kind: 'done', text: 'The member was removed.' });
  });

}
