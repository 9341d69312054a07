import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import type { SignInReasonCode } from '../../shared/authentication.ts';
import { startSignInWallsSite } from '../support/sign-in-walls-site.ts';
import { stackTest } from '../support/stack-fixture.ts';

// The real edge (wrangler dev, local D1) and the real host (Chromium), an agent navigating through
// the HTTP API. Each sign-in wall real sites use parks the run, and the owner reads why on the
// run; ordinary pages with an email field or a "Sign in" link do not.

// A parked run's sign-in window holds its profile's browser until nobody waits on it: each case
// ends its run, as an agent that stops waiting does, which frees that browser at once, so the
// seven walls take turns on the host's three slots (issue 32).
const it = stackTest({ site: startSignInWallsSite });

const WALLS: ReadonlyArray<{ path: string; shape: string; reasons: SignInReasonCode[] }> = [
  { path: '/identifier-first/reports', shape: 'an identifier-first sign-in', reasons: ['identifier_form', 'sign_in_heading', 'redirected_with_return_url'] },
  { path: '/sso/reports', shape: 'a page of only single-sign-on buttons', reasons: ['single_sign_on', 'sign_in_heading', 'redirected_with_return_url'] },
  { path: '/passkey/signin', shape: 'a passkey prompt', reasons: ['passkey', 'sign_in_heading'] },
  { path: '/passkey-field/signin', shape: 'a field offering passkeys', reasons: ['passkey'] },
  { path: '/shadow/signin', shape: 'a sign-in form in a closed shadow root', reasons: ['password_field', 'identifier_form'] },
  { path: '/declarative-shadow/signin', shape: 'a password field in a declarative closed shadow root', reasons: ['password_field'] },
  { path: '/unauthorized/reports', shape: 'a page that answers 401', reasons: ['unauthorized'] },
];

describe('sign-in walls through the API', () => {
  it.for(WALLS.map((wall, index) => ({ ...wall, profile: `wall-${index}` })))(
    '$shape parks the run, with its reasons on the wait',
    async (wall, { stack, site, agent, owner }) => {
      const run = await owner.createRun({ profile_id: wall.profile, intent: 'Read my reports', origins: [site.origin], deadline_ms: 600_000 });
      try {
        const answer = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}${wall.path}` })).body;
        expect(answer).toMatchObject({ state: 'failed', error: { code: 'authentication_required' }, retryable: true });
        const parked = await agent.run(run.id);
        expect(parked.state).toBe('waiting_for_authentication');
        expect(parked.authentication?.reasons.map((reason) => reason.code).sort()).toEqual([...wall.reasons].sort());
        const [episodes] = await stack.queryD1(`SELECT protected_url FROM sign_in_episodes WHERE profile_id = '${wall.profile}' AND state = 'open'`);
        expect(episodes?.[0]?.protected_url).toBe(`${site.origin}${wall.path}`);
      } finally {
        // Nobody signs in here: the agent stops waiting, whatever the case found.
        await agent.raw('POST', `/v1/runs/${run.id}/cancel`);
      }
    },
  );

  it('ordinary pages that merely hold an email field, a search or a "Sign in" link never park the run', async ({ site, agent, owner }) => {
    const run = await owner.createRun({ profile_id: 'ordinary', intent: 'Read the news, search and get help', origins: [site.origin], deadline_ms: 600_000 });
    for (const path of ['/newsletter', '/search', '/home', '/help/recover-account']) {
      const page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}${path}` })).body);
      expect(new URL(page.url).pathname).toBe(path);
      expect((await agent.run(run.id)).state).toBe('running');
    }
    await agent.report(run.id, 'completed', 'read the four pages');
  });
});
