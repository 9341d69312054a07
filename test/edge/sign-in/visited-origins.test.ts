import { SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { signInRouteInWords } from '../../../edge/sign-in/owner-views.ts';
import type { ActivityList, SignInList } from '../../../shared/api.ts';
import { call, partiesForEachTest, row } from '../support/edge-client.ts';
import { definitionEvent, deliver, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Where a person's sign-in window went (DESIGN.md section 18): the host reports the origins with
// the ceremony's outcome; the owner reads them on the API and the console; the agent never does.

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode } = signInFixture(parties);

const PROVIDER = 'https://accounts.example';
const MFA = 'https://mfa.example';

/** A console session cookie for the owner. */
async function consoleCookie(): Promise<string> {
  const signedIn = await SELF.fetch('http://127.0.0.1:8787/console/sign-in', {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: 'http://127.0.0.1:8787' },
    body: new URLSearchParams({ token: parties.owner.token }).toString(),
  });
  return (signedIn.headers.get('Set-Cookie') ?? '').split(';')[0] ?? '';
}

describe('the origins a sign-in went through', () => {
  it('are shown to the owner with the episode and in the run timeline, never in the agent activity', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const answer = await deliver(await definitionEvent(episode, { visited_origins: [ORIGIN, PROVIDER, MFA, ORIGIN] }));
    expect(answer.body).toMatchObject({ outcome: 'verified', applied: true });
    expect(await row('SELECT visited_origins FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({
      visited_origins: JSON.stringify([ORIGIN, PROVIDER, MFA, ORIGIN]),
    });

    const signIns = (await call<SignInList>('GET', '/v1/sign-ins', { token: parties.owner.token })).body.sign_ins;
    expect(signIns.find((s) => s.id === episode.id)?.visited_origins).toEqual([ORIGIN, PROVIDER, MFA, ORIGIN]);

    const cookie = await consoleCookie();
    const signInsPage = await (await SELF.fetch('http://127.0.0.1:8787/console/sign-ins', { headers: { Cookie: cookie } })).text();
    expect(signInsPage).toContain('accounts.example → mfa.example → back');
    const runPage = await (await SELF.fetch(`http://127.0.0.1:8787/console/runs/${run.id}`, { headers: { Cookie: cookie } })).text();
    expect(runPage).toContain('accounts.example → mfa.example → back');

    const activity = await call<ActivityList>('GET', `/v1/runs/${run.id}/activity`, { token: parties.agent.token });
    expect(activity.status).toBe(200);
    expect(JSON.stringify(activity.body)).not.toContain('accounts.example');
    expect(JSON.stringify(activity.body)).not.toContain('mfa.example');
  });

  it('are empty for an episode whose host did not report them', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    await deliver(await definitionEvent(episode));
    const signIns = (await call<SignInList>('GET', '/v1/sign-ins', { token: parties.owner.token })).body.sign_ins;
    expect(signIns.find((s) => s.id === episode.id)?.visited_origins).toEqual([]);
  });

  it('an event whose origins are not origins is refused and records nothing', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const answer = await deliver(await definitionEvent(episode, { visited_origins: ['https://accounts.example/login?user=ada'] }));
    expect(answer.status).toBe(401);
    expect(await row('SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({ n: 0 });
  });
});

describe('a sign-in route in words', () => {
  it('names the hosts after the site and says back when the window came back', () => {
    expect(signInRouteInWords(ORIGIN, [ORIGIN, PROVIDER, MFA, ORIGIN])).toBe('accounts.example → mfa.example → back');
  });

  it('starts at the provider when the sign-in page itself was there', () => {
    expect(signInRouteInWords(ORIGIN, [PROVIDER, ORIGIN])).toBe('accounts.example → back');
  });

  it('says where the window was left when it never came back', () => {
    expect(signInRouteInWords(ORIGIN, [ORIGIN, PROVIDER])).toBe('accounts.example');
  });

  it('says the window stayed on the site when it never left', () => {
    expect(signInRouteInWords(ORIGIN, [ORIGIN])).toBe('stayed on 127.0.0.1:8123');
  });

  it('is empty when nothing was recorded', () => {
    expect(signInRouteInWords(ORIGIN, [])).toBe('');
  });
});
