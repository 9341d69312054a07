import { env } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { reconcileSignIns } from '../../../edge/sign-in/maintenance.ts';
import { restartSignIn } from '../../../edge/sign-in/owner-views.ts';
import { parkForSignIn } from '../../../edge/sign-in/park.ts';
import { backgroundSettled, partiesForEachTest, workerdPorts } from '../support/edge-client.ts';
import { ceremonyBookkeepingHost, scriptedHost } from '../support/fake-host.ts';
import { signInFixture } from '../support/sign-in-fixture.ts';

// Episodes of one profile take turns in its one sign-in window (ADR-0164 part 3: "exactly one
// interruption per unresolved sign-in episode, while requiring eventual completion or an explicit
// bounded stop"). The host ends the older ceremony of a profile when a newer one begins on it; the
// maintenance pass must begin the ended one again once the window is free, or its run would wait,
// with an unresolved notice and no sign-in window, until its deadline. The case below is a host
// restart: the pass begins the lost ceremony of origin A, which ends the live one of origin B.

const A = 'http://127.0.0.1:8131';
const B = 'http://127.0.0.1:8132';

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode } = signInFixture(parties);

const runningOn = (origin: string) => runningRun({ profile: 'shared', origins: [origin], intent: 'read my reports' });
const wall = (run: Awaited<ReturnType<typeof runningOn>>, origin: string, p: ReturnType<typeof workerdPorts>) =>
  hitSignInWall(run, { origin, ports: p, signInUrl: `${origin}/signin` });
const episodeOf = (origin: string) => openEpisode('shared', origin);
const stateOf = async (runId: string) => (await env.DB.prepare('SELECT state FROM runs WHERE id = ?').bind(runId).first<{ state: string }>())?.state;

describe('two sign-in episodes of one profile on two origins', () => {
  it('after the person signs in to one origin, the other episode, whose ceremony the host ended for it, gets its sign-in window again and its run resumes', async () => {
    const host = ceremonyBookkeepingHost();
    const p = workerdPorts(host.connector);
    const ra = await runningOn(A);
    await wall(ra, A, p); // ceremony A begins
    host.restart(); // the host process is restarted: ceremony A is lost
    const rb = await runningOn(B);
    await wall(rb, B, p); // ceremony B begins on the new host
    await reconcileSignIns(p); // A is `unknown`: begun again; B waits for the profile's window
    const beginsBefore = host.begins.length;

    // The person signs in to A (its window is the one shown); the delivery is lost, the cron finds it.
    host.verify((await episodeOf(A))!.ceremony_id);
    await reconcileSignIns(p);
    expect(await stateOf(ra.id)).toBe('queued');

    // B's run still waits; its window must come (begun on the host once A's sign-in is done).
    for (let pass = 0; pass < 3; pass++) await reconcileSignIns(p);
    const episodeB = await episodeOf(B);
    expect(episodeB).not.toBeNull();
    const rebegun = host.begins.slice(beginsBefore).filter((params) => params.origin === B);
    expect(rebegun.length).toBeGreaterThan(0);
    // ... and once the person signs in to B, the run resumes.
    host.verify(String(rebegun.at(-1)!.ceremony_id));
    await reconcileSignIns(p);
    expect(await stateOf(rb.id)).toBe('queued');
  });
});

describe('a ceremony still being begun in the background', () => {
  it("holds the profile's window: a wall of the same profile on another origin meanwhile waits instead of ending it", async () => {
    let letBeginAnswer: () => void = () => {};
    const beginMayAnswer = new Promise<void>((resolve) => {
      letBeginAnswer = resolve;
    });
    const host = scriptedHost(async (method, params) => {
      if (method !== 'ceremony.begin') return { ended: false };
      await beginMayAnswer;
      return { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
    });
    const p = workerdPorts(host.connector);
    const ra = await runningOn(A);
    const rb = await runningOn(B);
    const wallAt = (origin: string) => ({
      signal: { origin, reasons: [{ code: 'password_field' as const, detail: 'a visible password field' }] },
      signInUrl: `${origin}/signin`,
      protectedUrl: `${origin}/reports`,
      toolCallId: 'call_test',
    });
    await parkForSignIn(p, ra, wallAt(A)); // A's ceremony is handed to the background; the host is slow to answer
    await vi.waitFor(() => expect(host.calls.filter((c) => c.method === 'ceremony.begin')).toHaveLength(1));
    await parkForSignIn(p, rb, wallAt(B)); // meanwhile B meets its wall on the same profile
    letBeginAnswer();
    await backgroundSettled();

    const begun = host.calls.filter((c) => c.method === 'ceremony.begin').map((c) => c.params.origin);
    expect(begun).toEqual([A]);
    expect((await episodeOf(A))?.ceremony_state).toBe('awaiting_person');
    expect((await episodeOf(B))?.ceremony_state).toBeNull();
    expect(await stateOf(rb.id)).toBe('waiting_for_authentication');
  });
});

describe('a ceremony begun again by the maintenance pass or restarted by the owner', () => {
  const wallAt = (origin: string) => ({
    signal: { origin, reasons: [{ code: 'password_field' as const, detail: 'a visible password field' }] },
    signInUrl: `${origin}/signin`,
    protectedUrl: `${origin}/reports`,
    toolCallId: 'call_test',
  });

  it("holds the profile's window while the host checks the saved session: a wall of the profile on another origin meanwhile waits", async () => {
    const host = ceremonyBookkeepingHost();
    const p = workerdPorts(host.connector);
    const ra = await runningOn(A);
    await wall(ra, A, p);
    host.restart(); // A is lost on the host
    const profileOfA = (await episodeOf(A)).host_profile_id;
    host.slowSessionCheckFor(profileOfA);
    const pass = reconcileSignIns(p); // A is `unknown`: begun again; its session check is slow
    await vi.waitFor(() => expect(host.begins.filter((begin) => begin.profile_id === profileOfA)).toHaveLength(2));
    const rb = await runningOn(B);
    await parkForSignIn(p, rb, wallAt(B));
    await backgroundSettled();
    host.release();
    await pass;
    // (The pass also looks at other tests' open episodes: count this profile's begins only.)
    expect(host.begins.filter((begin) => begin.profile_id === profileOfA).map((begin) => begin.origin)).toEqual([A, A]);
    expect((await episodeOf(A))?.ceremony_state).toBe('awaiting_person');
  });

  it("keeps the window the owner's restart took while its begin runs: a wall of the profile on another origin meanwhile waits", async () => {
    const host = ceremonyBookkeepingHost();
    const p = workerdPorts(host.connector);
    const ra = await runningOn(A);
    await wall(ra, A, p);
    host.slowSessionCheckFor((await episodeOf(A)).host_profile_id);
    const owner = { id: parties.owner.id, ownerId: parties.owner.id, kind: 'owner' as const };
    const restarting = restartSignIn(p, owner, (await episodeOf(A)).id);
    await vi.waitFor(() => expect(host.begins.filter((begin) => begin.origin === A)).toHaveLength(2));
    const rb = await runningOn(B);
    await parkForSignIn(p, rb, wallAt(B));
    await backgroundSettled();
    host.release();
    expect((await restarting).ceremony_state).toBe('awaiting_person');
    expect(host.begins.map((begin) => `${begin.origin} g${begin.generation}`)).toEqual([`${A} g1`, `${A} g2`]);
  });
});
