import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { reconcileSignIns } from '../../../edge/sign-in/maintenance.ts';
import { signCeremonyEvent } from '../../../shared/authentication.ts';
import { call, partiesForEachTest, row, workerdPorts } from '../support/edge-client.ts';
import { scriptedHost } from '../support/fake-host.ts';
import { claimsFor, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// The maintenance (cron) pass over open sign-in episodes, against the real D1 in workerd.

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode, notices } = signInFixture(parties);
const ports = workerdPorts;

describe('the maintenance pass', () => {
  it('the maintenance pass abandons an episode nobody waits for and resolves its notice', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    await call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token });
    await reconcileSignIns(ports());
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    expect((await notices())[0]!.resolved_at).not.toBeNull();
  });
});

describe('the maintenance pass covers every open episode', () => {
  it('a missed delivery is recovered even when more than 50 older episodes are open', async () => {
    // The pass must not look only at the oldest open episodes across all owners: episodes whose
    // person has not signed in yet stay open (up to the runs' deadline, an hour), so a newer
    // episode whose callback was lost would never be looked at meanwhile.
    const unreachable = ports();
    for (let i = 0; i < 50; i++) {
      const run = await runningRun({ profile: `older-${i}` });
      await hitSignInWall(run, { origin: ORIGIN, ports: unreachable });
    }
    const newest = await runningRun({ profile: 'newest' });
    await hitSignInWall(newest, { origin: ORIGIN, ports: unreachable });
    const lost = await openEpisode('newest');
    const verified = await signCeremonyEvent(env.HOST_SHARED_SECRET, claimsFor(lost));
    const host = scriptedHost((method, params) => {
      if (method === 'ceremony.status') {
        return params.ceremony_id === lost.ceremony_id
          ? { ceremony_id: params.ceremony_id, state: 'verified', event: verified }
          : { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
      }
      return { ended: false };
    });
    for (let pass = 0; pass < 3; pass++) await reconcileSignIns(ports(host.connector));
    expect((await row('SELECT state FROM runs WHERE id = ?', newest.id))?.state).toBe('queued');
  }, 120_000);
});

describe('the maintenance pass is the safety net of the ceremony start', () => {
  it("notifies the owner once when the host's ceremony waits for the person but the start that began it ended before its notice", async () => {
    const run = await runningRun({ profile: 'cut-short' });
    await hitSignInWall(run);
    const episode = await openEpisode('cut-short');
    // The background start was cut short after the host took the begin (e.g. a Worker's
    // waitUntil ran out): the episode is open, its run waits, and the owner was never told.
    await env.DB.prepare('DELETE FROM notices WHERE episode_id = ?').bind(episode.id).run();
    const host = scriptedHost((method, params) =>
      method === 'ceremony.status' ? { ceremony_id: params.ceremony_id, state: 'awaiting_person' } : { ended: false },
    );
    await reconcileSignIns(ports(host.connector));
    await reconcileSignIns(ports(host.connector));
    expect(await row('SELECT count(*) AS n FROM notices WHERE episode_id = ?', episode.id)).toEqual({ n: 1 });
    expect(await row('SELECT state, ceremony_state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({
      state: 'open',
      ceremony_state: 'awaiting_person',
    });
  });
});
