import { Hono } from 'hono';
import { listGrants, revokeGrant } from '../grants/grants.ts';
import { humanDuration, type ListedThing, listPage } from './pages.ts';
import { type ConsoleEnv, ownerOf, refusalAsNotice, requireCsrf } from './session-guard.ts';

/** The grants section: the owner's grants, each revocable while it is live. */
export const grantsSection = new Hono<ConsoleEnv>()
  .get('/console/grants', async (c) => {
    const rows = await listGrants(c.var.ports, ownerOf(c.var.session));
    const now = c.var.ports.clock.now();
    const things = rows.map(
      (grant): ListedThing => ({
        title: `${grant.actions?.join(', ') ?? 'every act'} on ${grant.origin}`,
        details: [
          ['Uses', `${grant.uses} of ${grant.maxUses}`],
          ['Expires', grant.expiresAt > now ? `in ${humanDuration(grant.expiresAt - now)}` : 'expired'],
          ['Policy', grant.policyProfile],
          ['State', grant.revokedAt !== null ? 'revoked' : grant.expiresAt <= now || grant.uses >= grant.maxUses ? 'spent' : 'live'],
        ],
        ...(grant.revokedAt === null && grant.expiresAt > now ? { actions: [{ path: `/console/grants/${grant.id}/revoke`, label: 'Revoke' }] } : {}),
      }),
    );
    return c.html(listPage('/console/grants', 'Grants', things, c.var.session.csrfToken, 'No grants.', c.req.query('notice')));
  })
  .post('/console/grants/:id/revoke', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      await revokeGrant(c.var.ports, ownerOf(c.var.session), c.req.param('id'));
      return 'Revoked: later acts are no longer covered.';
    });
    return c.redirect(`/console/grants?notice=${encodeURIComponent(notice)}`, 303);
  });
