import { describe, expect, it } from 'vitest';
import type { SignInList } from '../../../shared/api.ts';
import { CeremonyEventClaims, MAX_VISITED_ORIGINS, MAX_VISITED_ORIGINS_CHARS } from '../../../shared/authentication.ts';
import { call, partiesForEachTest, row } from '../support/edge-client.ts';
import { claimsFor, definitionEvent, deliver, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Hostile and extreme `visited_origins` in host-signed ceremony events.

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode, runState } = signInFixture(parties);

/** An origin whose host name is `length` characters long in all (labels of at most 63). */
function longOrigin(index: number, length: number): string {
  const prefix = `https://`;
  const tail = `.idp${index}.example`;
  let host = '';
  while (prefix.length + host.length + tail.length < length) host += host.length % 64 === 63 ? '.' : 'a';
  return `${prefix}${host.replace(/\.$/, 'a')}${tail}`;
}

describe('hostile visited_origins are refused and change nothing', () => {
  const hostile: Array<[string, unknown]> = [
    ['33 entries', Array.from({ length: MAX_VISITED_ORIGINS + 1 }, (_, i) => `https://idp${i}.example`)],
    ['a path', ['https://accounts.example/login']],
    ['a query', ['https://accounts.example?user=ada']],
    ['a fragment', ['https://accounts.example#x']],
    ['a javascript: scheme', ['javascript:alert(1)']],
    ['a data: scheme', ['data:text/html,<b>x</b>']],
    ['a huge string', [`https://${'a'.repeat(10_000)}.example`]],
    ['markup', ['https://a.example"><script>alert(1)</script>']],
    ['null', null],
    ['a string, not a list', 'https://accounts.example'],
    ['userinfo', ['https://ada:secret@accounts.example']],
  ];
  for (const [name, visited] of hostile) {
    it(`${name}: refused (4xx) and nothing recorded; the episode stays open`, async () => {
      const run = await runningRun();
      await hitSignInWall(run);
      const episode = await openEpisode();
      const answer = await deliver(await definitionEvent(episode, { visited_origins: visited as string[] }));
      // 401 (claims that do not validate), or 400 for a token longer than the delivery takes.
      expect([400, 401]).toContain(answer.status);
      expect(await row('SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({ n: 0 });
      expect((await runState(run.id)).state).toBe('waiting_for_authentication');
    });
  }

  it('a repeat of the origin before (which the host always folds) is refused', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const answer = await deliver(await definitionEvent(episode, { visited_origins: [ORIGIN, 'https://accounts.example', 'https://accounts.example', ORIGIN] }));
    // Before the fix: 200, applied; stored and shown as "accounts.example → accounts.example → back".
    expect(answer.status).toBe(401);
    expect(await row('SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({ n: 0 });
  });
});

describe('the largest visited_origins the claims allow', () => {
  it('an event with as many characters of origins as the claims take is carried and applied, not refused for its size', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    // Origins of 100 characters up to MAX_VISITED_ORIGINS_CHARS in all, back to the site last.
    const hops = Math.floor((MAX_VISITED_ORIGINS_CHARS - 2 * ORIGIN.length) / 100);
    const visited = [ORIGIN, ...Array.from({ length: hops }, (_, i) => longOrigin(i, 100)), ORIGIN];
    expect(visited.join('').length).toBeLessThanOrEqual(MAX_VISITED_ORIGINS_CHARS);
    const claims = claimsFor(
      { ...episode, origin: ORIGIN },
      { method: 'definition', definition: { id: 'fixture-reports', version: 1 }, account_sha256: 'a'.repeat(64), visited_origins: visited },
    );
    expect(CeremonyEventClaims.safeParse(claims).success).toBe(true);
    const answer = await deliver(await definitionEvent(episode, { event_id: claims.event_id, visited_origins: visited }));
    // Before the claims bounded the origins' characters: 400 (the signed event was longer than the 4,096 characters the delivery takes), and the sign-in was lost.
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ outcome: 'verified', applied: true });
    expect((await runState(run.id)).state).toBe('queued');
    const signIns = (await call<SignInList>('GET', '/v1/sign-ins', { token: parties.owner.token })).body.sign_ins;
    expect(signIns.find((s) => s.id === episode.id)?.visited_origins).toEqual(visited);
  });

  it('more characters of origins than that are refused and records nothing', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const visited = [ORIGIN, ...Array.from({ length: 10 }, (_, i) => longOrigin(i, 100)), ORIGIN];
    expect(visited.join('').length).toBeGreaterThan(MAX_VISITED_ORIGINS_CHARS);
    expect([400, 401]).toContain((await deliver(await definitionEvent(episode, { visited_origins: visited }))).status);
    expect(await row('SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({ n: 0 });
  });
});
