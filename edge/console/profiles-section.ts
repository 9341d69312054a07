import { eq } from 'drizzle-orm';
import { Hono } from 'hono';
import { RunProfileId } from '../../shared/api.ts';
import { profileBindings, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { revokeProfile } from '../profiles/revocation.ts';
import { type ListedThing, listPage } from './pages.ts';
import { RUNS_LISTED } from './runs-section.ts';
import { type ConsoleEnv, ownerOf, refusalAsNotice, requireCsrf } from './session-guard.ts';

/** The profiles section: every profile the owner's runs used, with its binding, revocable. */
export const profilesSection = new Hono<ConsoleEnv>()
  .get('/console/profiles', async (c) => {
    // Every profile the owner's runs used, with its binding (made at its first sign-in) when there is one.
    const [bindings, used] = await Promise.all([
      c.var.ports.db.select().from(profileBindings).where(eq(profileBindings.ownerId, c.var.session.ownerId)),
      c.var.ports.db.selectDistinct({ profileId: runs.profileId }).from(runs).where(eq(runs.ownerId, c.var.session.ownerId)).limit(RUNS_LISTED),
    ]);
    const stateOf = new Map(bindings.map((binding) => [binding.profileId, binding.state]));
    const profiles = [...new Set([...used.map((row) => row.profileId), ...stateOf.keys()])].sort();
    const things = profiles.map((profileId): ListedThing => {
      const state = stateOf.get(profileId) ?? 'active';
      return {
        title: `Profile ${profileId}`,
        details: [['State', state]],
        ...(state === 'active' ? { actions: [{ path: `/console/profiles/${encodeURIComponent(profileId)}/revoke`, label: 'Revoke this profile' }] } : {}),
      };
    });
    return c.html(listPage('/console/profiles', 'Browser profiles', things, c.var.session.csrfToken, 'No profiles yet.', c.req.query('notice')));
  })
  .post('/console/profiles/:profile/revoke', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const profile = RunProfileId.safeParse(c.req.param('profile'));
      if (!profile.success) throw new DomainError('not_found', 'no such profile');
      await revokeProfile(c.var.ports, ownerOf(c.var.session), profile.data);
      return 'Revoked: its waiting runs failed and new runs on it are refused.';
    });
    return c.redirect(`/console/profiles?notice=${encodeURIComponent(notice)}`, 303);
  });
