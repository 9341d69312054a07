import { createRoute } from '@hono/zod-openapi';
import { CeremonyEventReceipt, IdParam, NoticeList, ProfileBindingView, ProfileParam, SignInList, SignInListQuery, SignInView } from '../../../shared/api.ts';
import { CeremonyEventDelivery } from '../../../shared/authentication.ts';
import { revokeProfile } from '../../profiles/revocation.ts';
import { kickRecipeRuns } from '../../recipes/scheduling.ts';
import { applyCeremonyEvent } from '../../sign-in/events.ts';
import { listNotices, listSignIns, restartSignIn } from '../../sign-in/owner-views.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const list = createRoute({
  method: 'get',
  path: '/v1/sign-ins',
  summary: "The owner's sign-in episodes (one open episode per profile and origin), newest first",
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { query: SignInListQuery },
  responses: { 200: jsonResponse(SignInList, 'sign-in episodes'), ...errorResponses(...AUTH_ERRORS) },
});

const restart = createRoute({
  method: 'post',
  path: '/v1/sign-ins/{id}/restart',
  summary: 'Start a newer ceremony generation for an open sign-in (the window was closed or timed out); older events stop counting',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(SignInView, 'the episode at its new generation'), ...errorResponses(...AUTH_ERRORS, 'not_found', 'already_decided') },
});

const notices = createRoute({
  method: 'get',
  path: '/v1/notices',
  summary: "The owner's notices: exactly one per sign-in episode, resolved when the episode ends",
  security,
  middleware: [requirePrincipal('owner')] as const,
  responses: { 200: jsonResponse(NoticeList, 'notices, newest first'), ...errorResponses(...AUTH_ERRORS) },
});

const revoke = createRoute({
  method: 'post',
  path: '/v1/profiles/{profile_id}/revoke',
  summary: 'Revoke a profile: fences its sign-in waits (their runs fail) and refuses new runs on it',
  security,
  middleware: [requirePrincipal('owner')] as const,
  request: { params: ProfileParam },
  responses: { 200: jsonResponse(ProfileBindingView, 'the revoked binding'), ...errorResponses(...AUTH_ERRORS) },
});

const ceremonyEvent = createRoute({
  method: 'post',
  path: '/v1/host/ceremony-events',
  summary: "A browser host's signed ceremony outcome (HS256 over the host's shared secret); recorded, and applied at most once",
  request: { body: jsonBody(CeremonyEventDelivery) },
  responses: {
    200: jsonResponse(CeremonyEventReceipt, 'the event was recorded; `applied` says whether it resolved its episode'),
    ...errorResponses('unauthenticated', 'malformed_json', 'invalid_request', 'payload_too_large', 'unsupported_media_type'),
  },
});

/**
 * Sign-in endpoints (DESIGN.md section 8): the owner's episodes, notices and profile revocation;
 * and the host's ceremony callback, authenticated by the event's own signature, not a bearer token.
 */
export const signInRoutes = newRouter()
  .openapi(list, async (c) => c.json(await listSignIns(c.var.ports, c.var.principal, c.req.valid('query').state), 200))
  .openapi(restart, async (c) => c.json(await restartSignIn(c.var.ports, c.var.principal, c.req.valid('param').id), 200))
  .openapi(notices, async (c) => c.json(await listNotices(c.var.ports, c.var.principal), 200))
  .openapi(revoke, async (c) => c.json(await revokeProfile(c.var.ports, c.var.principal, c.req.valid('param').profile_id), 200))
  .openapi(ceremonyEvent, async (c) => {
    const receipt = await applyCeremonyEvent(c.var.ports, c.req.valid('json').event, 'callback');
    // Recipe-bound runs it requeued resume from their persisted step by themselves (issue 19).
    await kickRecipeRuns(c.var.ports, receipt.resumed_runs);
    return c.json(receipt, 200);
  });
