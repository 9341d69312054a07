import { Hono } from 'hono';
import { DomainError } from '../domain-error.ts';
import { issueLiveViewLink } from '../sign-in/live-view.ts';
import { listNotices, listSignIns, restartSignIn, signInRouteInWords } from '../sign-in/owner-views.ts';
import { type ListedThing, listPage } from './pages.ts';
import { type ConsoleEnv, ownerOf, refusalAsNotice, requireCsrf } from './session-guard.ts';

/** The sign-ins section: episodes and notices, a live-view link and a restart for each open episode. */
export const signInsSection = new Hono<ConsoleEnv>()
  .get('/console/sign-ins', async (c) => {
    const owner = ownerOf(c.var.session);
    const [{ sign_ins }, { notices: ownerNotices }] = await Promise.all([listSignIns(c.var.ports, owner, undefined), listNotices(c.var.ports, owner)]);
    const things = [
      ...sign_ins.map(
        (episode): ListedThing => ({
          title: `Sign in to ${episode.origin} (profile ${episode.profile_id})`,
          details: [
            ['State', episode.state],
            ['Ceremony', episode.ceremony_state ?? 'not started'],
            ['Question', episode.question],
            ['Why this looks like sign-in', episode.reasons.map((reason) => reason.detail).join('; ') || 'no run waits now'],
            ['Went through', signInRouteInWords(episode.origin, episode.visited_origins) || 'not known yet'],
            ['Runs waiting', episode.waiting_runs.join(', ') || 'none'],
            ['Opened', episode.opened_at],
          ],
          actions:
            episode.state === 'open'
              ? [
                  { path: `/console/sign-ins/${episode.id}/live-view`, label: 'Open the live view' },
                  { path: `/console/sign-ins/${episode.id}/restart`, label: 'Restart the sign-in window' },
                ]
              : [],
        }),
      ),
      ...ownerNotices.map(
        (notice): ListedThing => ({
          title: `Notice: ${notice.text}`,
          details: [
            ['Run', notice.run_id],
            ['Sent', notice.created_at],
            ['Resolved', notice.resolved_at ?? 'not yet'],
          ],
        }),
      ),
    ];
    return c.html(listPage('/console/sign-ins', 'Sign-ins and notices', things, c.var.session.csrfToken, 'No sign-ins.', c.req.query('notice')));
  })
  // A single-use link to the episode's live view, bound to this session, 5 minutes to connect.
  .post('/console/sign-ins/:id/live-view', async (c) => {
    await requireCsrf(c);
    try {
      const link = await issueLiveViewLink(c.var.ports, c.var.session, c.req.param('id'));
      return c.redirect(`/console/live/${link.token}`, 303);
    } catch (error) {
      if (!(error instanceof DomainError) || error.code !== 'not_found') throw error;
      return c.redirect(`/console/sign-ins?notice=${encodeURIComponent(`Not done: ${error.message}.`)}`, 303);
    }
  })
  .post('/console/sign-ins/:id/restart', async (c) => {
    await requireCsrf(c);
    const notice = await refusalAsNotice(async () => {
      const restarted = await restartSignIn(c.var.ports, ownerOf(c.var.session), c.req.param('id'));
      return `Restarted: the sign-in window is at generation ${restarted.generation}.`;
    });
    return c.redirect(`/console/sign-ins?notice=${encodeURIComponent(notice)}`, 303);
  });
