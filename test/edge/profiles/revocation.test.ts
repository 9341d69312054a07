import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { fireDueSchedules } from '../../../edge/schedules/schedules.ts';
import type { ProfileBindingView } from '../../../shared/api.ts';
import { signCeremonyEvent } from '../../../shared/authentication.ts';
import { call, callError, partiesForEachTest, row } from '../support/edge-client.ts';
import { claimsFor, definitionEvent, deliver, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Revoking a browser profile fences every continuation on it: waits, requeued and running runs,
// schedules and later ceremony events (ADR-0164 part 3), against the real D1 in workerd.

const parties = partiesForEachTest();
const { ports, runningRun, hitSignInWall, openEpisode, runState } = signInFixture(parties);

describe('profile revocation', () => {
  it('revoking the profile fences its waits, fails their runs, refuses new runs and later events', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const revoked = await call<ProfileBindingView>('POST', '/v1/profiles/me/revoke', { token: parties.owner.token });
    expect(revoked.body).toMatchObject({ state: 'revoked', fenced_runs: [run.id] });
    expect((await runState(run.id)).state).toBe('failed');
    expect((await deliver(await definitionEvent(episode))).body.applied).toBe(false);
    const again = await callError('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'me', intent: 'x', origins: [ORIGIN] } });
    expect([again.status, again.body.error.code]).toEqual([409, 'profile_revoked']);
  });
});

describe('profile revocation fences every continuation on the profile (ADR-0164 part 3)', () => {
  it('a run already requeued by a verified sign-in does not continue on a profile revoked before the agent picked it up', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const answer = await deliver(await signCeremonyEvent(env.HOST_SHARED_SECRET, claimsFor(await openEpisode())));
    expect(answer.body.resumed_runs).toEqual([run.id]);
    expect((await row('SELECT state FROM runs WHERE id = ?', run.id))?.state).toBe('queued');

    expect((await call('POST', '/v1/profiles/me/revoke', { token: parties.owner.token })).status).toBe(200);

    // The agent picks the run up: it must not be able to send anything on the revoked profile.
    const proposal = await callError('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.2.0', arguments: {} },
    });
    expect(proposal.status).toBe(409);
    expect(['profile_revoked', 'run_not_active']).toContain(proposal.body.error?.code);
    expect((await row('SELECT state FROM runs WHERE id = ?', run.id))?.state).not.toMatch(/^(queued|running)$/);
  });

  it('a running run on the profile cannot propose after the owner revoked the profile', async () => {
    const run = await runningRun();
    expect((await call('POST', '/v1/profiles/me/revoke', { token: parties.owner.token })).status).toBe(200);
    const proposal = await callError('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.2.0', arguments: {} },
    });
    expect(proposal.status).toBe(409);
    expect(['profile_revoked', 'run_not_active']).toContain(proposal.body.error?.code);
  });

  it('a schedule on a revoked profile queues no run ("new runs on the profile are refused")', async () => {
    const created = await call('POST', '/v1/schedules', {
      token: parties.owner.token,
      body: {
        cron: '* * * * *',
        intent: 'read the briefing',
        profile_id: 'sched-profile',
        origins: [ORIGIN],
        tool_versions: { 'browser.navigate': '1.2.0', 'browser.observe': '1.2.0', 'browser.act': '1.2.0' },
      },
    });
    expect(created.status).toBe(201);
    expect((await call('POST', '/v1/profiles/sched-profile/revoke', { token: parties.owner.token })).status).toBe(200);
    const fired = await fireDueSchedules(ports(), Date.now() + 60_000);
    expect(fired.filter((run) => run.profileId === 'sched-profile' && run.ownerId === parties.owner.id)).toEqual([]);
  });
});
