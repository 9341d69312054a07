import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { hostProfileId } from '../../../edge/profiles/bindings.ts';
import type { ActivityList, SignInView } from '../../../shared/api.ts';
import { signCeremonyEvent } from '../../../shared/authentication.ts';
import { call, callError, counts, partiesForEachTest, row } from '../support/edge-client.ts';
import { definitionEvent, deliver, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Ceremony outcomes arriving as host-signed events on the callback route, exactly as a real host
// sends them, against the real D1 in workerd (the host itself is unreachable here).

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode, runState, notices, noticeCount } = signInFixture(parties);

describe('ceremony events', () => {
  it('a verified event resolves the episode and requeues its runs in one step, without a message', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const messagesBefore = await row('SELECT count(*) AS n FROM messages WHERE run_id = ?', run.id);
    const answer = await deliver(await definitionEvent(await openEpisode()));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ outcome: 'verified', applied: true, resumed_runs: [run.id] });
    const view = await runState(run.id);
    expect(view).toMatchObject({ state: 'queued', latest_revision: null, authentication: null });
    expect(await row('SELECT state FROM sign_in_waits WHERE run_id = ?', run.id)).toEqual({ state: 'resolved' });
    const resolved = await notices();
    expect(resolved).toHaveLength(1);
    expect(resolved[0]!.resolved_at).not.toBeNull();
    expect(await row('SELECT count(*) AS n FROM messages WHERE run_id = ?', run.id)).toEqual(messagesBefore);
    const activity = (await call<ActivityList>('GET', `/v1/runs/${run.id}/activity`, { token: parties.owner.token })).body.activity.map(
      (a: { kind: string }) => a.kind,
    );
    expect(activity).toEqual(expect.arrayContaining(['sign_in_wait', 'ceremony_event']));
  });

  it('a resumed run acts only after a fresh read: its old revision is gone', async () => {
    const run = await runningRun();
    await env.DB.prepare('UPDATE runs SET latest_revision = 7 WHERE id = ?').bind(run.id).run();
    await hitSignInWall({ ...run, latestRevision: 7 });
    await deliver(await definitionEvent(await openEpisode()));
    const act = await callError('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision: 7, reference: 'e3' } },
    });
    expect([act.status, act.body.error.code]).toEqual([409, 'stale_revision']);
  });

  it('the same event delivered twice changes nothing the second time', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const event = await definitionEvent(await openEpisode());
    expect((await deliver(event)).body.applied).toBe(true);
    // The agent picks the run up again before the replay arrives.
    await call('POST', `/v1/runs/${run.id}/tool-calls`, { token: parties.agent.token, body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } });
    const before = await counts();
    const replay = await deliver(event);
    expect(replay.body).toMatchObject({ applied: false, resumed_runs: [] });
    expect((await runState(run.id)).state).toBe('running');
    expect(await counts()).toEqual(before);
  });

  it('an event delivered after the run was cancelled does not resume it', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    expect((await call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token })).status).toBe(200);
    const answer = await deliver(await definitionEvent(episode));
    expect(answer.body.resumed_runs).toEqual([]);
    expect((await runState(run.id)).state).toBe('cancelled');
    expect(await row('SELECT state, fence_reason FROM sign_in_waits WHERE run_id = ?', run.id)).toEqual({ state: 'fenced', fence_reason: 'cancelled' });
  });

  it('an event for another profile does not resolve the episode', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const answer = await deliver(await definitionEvent({ ...episode, host_profile_id: await hostProfileId(parties.owner.id, 'someone-else') }));
    expect(answer.body.applied).toBe(false);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
  });

  it('an event of another account than the one verified before for this profile does not resolve', async () => {
    const first = await runningRun();
    await hitSignInWall(first);
    expect((await deliver(await definitionEvent(await openEpisode(), { account_sha256: 'a'.repeat(64) }))).body.applied).toBe(true);
    const second = await runningRun();
    await hitSignInWall(second);
    const episode = await openEpisode();
    expect(episode.generation).toBe(2);
    expect((await deliver(await definitionEvent(episode, { account_sha256: 'b'.repeat(64) }))).body.applied).toBe(false);
    expect((await runState(second.id)).state).toBe('waiting_for_authentication');
    expect((await deliver(await definitionEvent(episode, { account_sha256: 'a'.repeat(64) }))).body.applied).toBe(true);
  });

  it('an event from an older ceremony generation does not resolve a restarted episode', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const old = await openEpisode();
    const restarted = await call<SignInView>('POST', `/v1/sign-ins/${old.id}/restart`, { token: parties.owner.token });
    expect(restarted.status).toBe(200);
    expect(restarted.body.generation).toBe(old.generation + 1);
    expect((await deliver(await definitionEvent(old))).body.applied).toBe(false);
    expect((await deliver(await definitionEvent({ ...old, generation: old.generation + 1 }))).body.applied).toBe(false);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
    expect((await deliver(await definitionEvent(await openEpisode()))).body.applied).toBe(true);
    expect(await noticeCount()).toBe(1);
  });

  it('challenge and not-verified outcomes are recorded but never resolve', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    for (const outcome of ['challenge', 'not_verified', 'account_mismatch'] as const) {
      expect((await deliver(await definitionEvent(episode, { outcome }))).body.applied).toBe(false);
    }
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
    expect(await row('SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?', episode.ceremony_id)).toEqual({ n: 3 });
  });

  it('a forged or expired event is refused and records nothing', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const before = await counts();
    const forged = await signCeremonyEvent('another-secret-of-at-least-32-bytes-long!', {
      event_id: 'cev_forged123',
      ceremony_id: episode.ceremony_id,
      host_id: 'h',
      profile_id: episode.host_profile_id,
      origin: ORIGIN,
      generation: episode.generation,
      outcome: 'verified',
      method: 'differential',
      decided_at_ms: Date.now(),
    });
    for (const event of [forged, 'not-a-token', `${(await definitionEvent(episode)).slice(0, -3)}abc`]) {
      const answer = await callError('POST', '/v1/host/ceremony-events', { body: { event } });
      expect([answer.status, answer.body.error.code]).toEqual([401, 'unauthenticated']);
    }
    const malformed = await callError('POST', '/v1/host/ceremony-events', { body: { event: 'x', extra: 1 } });
    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'invalid_request']);
    expect(await counts()).toEqual(before);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
  });

  it('a run past its deadline is fenced, not requeued, by a late event', async () => {
    const run = await runningRun({ deadlineMs: 1_000 });
    await hitSignInWall(run);
    const episode = await openEpisode();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await deliver(await definitionEvent(episode))).body.resumed_runs).toEqual([]);
    expect((await runState(run.id)).state).toBe('deadline_exceeded');
  });
});
