import { env } from 'cloudflare:test';
import { eq } from 'drizzle-orm';
import { beforeEach, describe, expect, it } from 'vitest';
import { type CeremonyEventClaims, signCeremonyEvent } from '../../shared/authentication.ts';
import * as schema from '../../edge/db/schema.ts';
import type { Ports } from '../../edge/ports.ts';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import { reconcileSignIns } from '../../edge/sign-in/maintenance.ts';
import { MAX_SIGN_IN_ATTEMPTS, parkForSignIn } from '../../edge/sign-in/park.ts';
import { type Parties, call, counts, seedParties, workerdPorts } from './edge-client.ts';

// Sign-in waits against the real D1 in workerd. The host is unreachable here (a closed port):
// parking still records the wait and the owner's one notice; the ceremony outcome arrives as a
// host-signed event on the callback route, exactly as a real host sends it. The real host and
// Chromium are exercised end to end in test/e2e/sign-in.test.ts.

const ORIGIN = 'http://127.0.0.1:8123';

const ports = (): Ports => workerdPorts();

let parties: Parties;
beforeEach(async () => {
  parties = await seedParties();
});

async function row(sql: string, ...binds: unknown[]) {
  return env.DB.prepare(sql).bind(...binds).first<Record<string, unknown>>();
}

/** An owner's run, claimed by the agent (its first proposal), so it is `running`. */
async function runningRun(profile = 'me', deadlineMs?: number) {
  const created = await call('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: profile, intent: 'file the weekly report', origins: [ORIGIN], ...(deadlineMs ? { deadline_ms: deadlineMs } : {}) },
  });
  expect(created.status).toBe(201);
  await call('POST', `/v1/runs/${created.body.id}/tool-calls`, { token: parties.agent.token, body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } });
  const run = await ports().db.select().from(schema.runs).where(eq(schema.runs.id, created.body.id)).get();
  expect(run?.state).toBe('running');
  return run!;
}

/** Parks `run` as dispatch does when the host says the page asks for sign-in. */
async function hitSignInWall(run: schema.RunRow) {
  await parkForSignIn(ports(), run, {
    signal: { origin: ORIGIN, evidence: 'password_field' },
    signInUrl: `${ORIGIN}/signin?next=/reports`,
    protectedUrl: `${ORIGIN}/reports`,
    toolCallId: 'call_test',
  });
}

async function openEpisode(profile = 'me') {
  return (await row("SELECT * FROM sign_in_episodes WHERE owner_id = ? AND profile_id = ? AND state = 'open'", parties.owner.id, profile)) as {
    id: string;
    ceremony_id: string;
    generation: number;
    host_profile_id: string;
  };
}

let eventSerial = 0;
async function eventFor(episode: { ceremony_id: string; generation: number; host_profile_id: string }, overrides: Partial<CeremonyEventClaims> = {}) {
  eventSerial += 1;
  return signCeremonyEvent(env.HOST_SHARED_SECRET, {
    event_id: `cev_test${Date.now()}${eventSerial}`,
    ceremony_id: episode.ceremony_id,
    host_id: 'host-1',
    profile_id: episode.host_profile_id,
    origin: ORIGIN,
    generation: episode.generation,
    outcome: 'verified',
    method: 'definition',
    definition: { id: 'fixture-reports', version: 1 },
    account_sha256: 'a'.repeat(64),
    decided_at_ms: Date.now(),
    ...overrides,
  });
}

function deliver(event: string) {
  return call('POST', '/v1/host/ceremony-events', { body: { event } });
}

async function runState(id: string) {
  return (await call('GET', `/v1/runs/${id}`, { token: parties.owner.token })).body;
}

async function noticeCount() {
  return (await call('GET', '/v1/notices', { token: parties.owner.token })).body.notices.length as number;
}

describe('parking for sign-in', () => {
  it('a run that meets a sign-in wall waits with a persisted wait, no lease, and the owner gets one notice', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const view = await runState(run.id);
    expect(view.state).toBe('waiting_for_authentication');
    expect(view.latest_revision).toBeNull();
    expect(view.authentication).toMatchObject({ origin: ORIGIN, generation: 1 });
    expect(view.authentication.question).toContain('Sign in to');
    const wait = await row('SELECT * FROM sign_in_waits WHERE run_id = ?', run.id);
    expect(wait).toMatchObject({ state: 'pending', host_profile_id: await hostProfileId(parties.owner.id, 'me'), origin: ORIGIN });
    expect(await row('SELECT lease_id FROM runs WHERE id = ?', run.id)).toEqual({ lease_id: null });
    expect(await noticeCount()).toBe(1);
    const proposal = await call('POST', `/v1/runs/${run.id}/tool-calls`, { token: parties.agent.token, body: { tool: 'browser.observe', version: '1.2.0', arguments: {} } });
    expect([proposal.status, proposal.body.error.code]).toEqual([409, 'run_not_active']);
  });

  it('repeated detections join the open episode: two runs, one episode, one notice', async () => {
    const first = await runningRun();
    const second = await runningRun();
    await hitSignInWall(first);
    await hitSignInWall(second);
    const episodes = await row("SELECT count(*) AS n FROM sign_in_episodes WHERE owner_id = ? AND state = 'open'", parties.owner.id);
    expect(episodes).toEqual({ n: 1 });
    expect(await noticeCount()).toBe(1);
    const list = await call('GET', '/v1/sign-ins?state=open', { token: parties.owner.token });
    expect(list.body.sign_ins[0].waiting_runs.sort()).toEqual([first.id, second.id].sort());
  });

  it('a run joining an episode whose ceremony ended without a sign-in opens a newer generation, not a second notice', async () => {
    const first = await runningRun();
    await hitSignInWall(first);
    const episode = await openEpisode();
    expect((await deliver(await eventFor(episode, { outcome: 'not_verified' }))).body.applied).toBe(false);
    const second = await runningRun();
    await hitSignInWall(second);
    const again = await openEpisode();
    expect([again.id, again.generation]).toEqual([episode.id, episode.generation + 1]);
    expect(again.ceremony_id).not.toBe(episode.ceremony_id);
    expect(await noticeCount()).toBe(1);
    expect((await deliver(await eventFor(again))).body.resumed_runs.sort()).toEqual([first.id, second.id].sort());
  });

  it(`a run that keeps meeting the wall without progress ends uncertain after ${MAX_SIGN_IN_ATTEMPTS} waits`, async () => {
    const run = await runningRun();
    await env.DB.prepare('UPDATE runs SET sign_in_attempts = ? WHERE id = ?').bind(MAX_SIGN_IN_ATTEMPTS, run.id).run();
    await hitSignInWall({ ...run, signInAttempts: MAX_SIGN_IN_ATTEMPTS });
    const view = await runState(run.id);
    expect(view.state).toBe('uncertain');
    expect(view.summary).toContain('without progress');
    expect(await noticeCount()).toBe(0);
  });
});

describe('ceremony events', () => {
  it('a verified event resolves the episode and requeues its runs in one step, without a message', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const messagesBefore = await row('SELECT count(*) AS n FROM messages WHERE run_id = ?', run.id);
    const answer = await deliver(await eventFor(await openEpisode()));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ outcome: 'verified', applied: true, resumed_runs: [run.id] });
    const view = await runState(run.id);
    expect(view).toMatchObject({ state: 'queued', latest_revision: null, authentication: null });
    expect(await row('SELECT state FROM sign_in_waits WHERE run_id = ?', run.id)).toEqual({ state: 'resolved' });
    const notices = (await call('GET', '/v1/notices', { token: parties.owner.token })).body.notices;
    expect(notices).toHaveLength(1);
    expect(notices[0].resolved_at).not.toBeNull();
    expect(await row('SELECT count(*) AS n FROM messages WHERE run_id = ?', run.id)).toEqual(messagesBefore);
    const activity = (await call('GET', `/v1/runs/${run.id}/activity`, { token: parties.owner.token })).body.activity.map((a: { kind: string }) => a.kind);
    expect(activity).toEqual(expect.arrayContaining(['sign_in_wait', 'ceremony_event']));
  });

  it('a resumed run acts only after a fresh read: its old revision is gone', async () => {
    const run = await runningRun();
    await env.DB.prepare('UPDATE runs SET latest_revision = 7 WHERE id = ?').bind(run.id).run();
    await hitSignInWall({ ...run, latestRevision: 7 });
    await deliver(await eventFor(await openEpisode()));
    const act = await call('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.act', version: '1.2.0', arguments: { action: 'click', revision: 7, reference: 'e3' } },
    });
    expect([act.status, act.body.error.code]).toEqual([409, 'stale_revision']);
  });

  it('the same event delivered twice changes nothing the second time', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const event = await eventFor(await openEpisode());
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
    const answer = await deliver(await eventFor(episode));
    expect(answer.body.resumed_runs).toEqual([]);
    expect((await runState(run.id)).state).toBe('cancelled');
    expect(await row('SELECT state, fence_reason FROM sign_in_waits WHERE run_id = ?', run.id)).toEqual({ state: 'fenced', fence_reason: 'cancelled' });
  });

  it('an event for another profile does not resolve the episode', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const answer = await deliver(await eventFor({ ...episode, host_profile_id: await hostProfileId(parties.owner.id, 'someone-else') }));
    expect(answer.body.applied).toBe(false);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
  });

  it('an event of another account than the one verified before for this profile does not resolve', async () => {
    const first = await runningRun();
    await hitSignInWall(first);
    expect((await deliver(await eventFor(await openEpisode(), { account_sha256: 'a'.repeat(64) }))).body.applied).toBe(true);
    const second = await runningRun();
    await hitSignInWall(second);
    const episode = await openEpisode();
    expect(episode.generation).toBe(2);
    expect((await deliver(await eventFor(episode, { account_sha256: 'b'.repeat(64) }))).body.applied).toBe(false);
    expect((await runState(second.id)).state).toBe('waiting_for_authentication');
    expect((await deliver(await eventFor(episode, { account_sha256: 'a'.repeat(64) }))).body.applied).toBe(true);
  });

  it('an event from an older ceremony generation does not resolve a restarted episode', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const old = await openEpisode();
    const restarted = await call('POST', `/v1/sign-ins/${old.id}/restart`, { token: parties.owner.token });
    expect(restarted.status).toBe(200);
    expect(restarted.body.generation).toBe(old.generation + 1);
    expect((await deliver(await eventFor(old))).body.applied).toBe(false);
    expect((await deliver(await eventFor({ ...old, generation: old.generation + 1 }))).body.applied).toBe(false);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
    expect((await deliver(await eventFor(await openEpisode()))).body.applied).toBe(true);
    expect(await noticeCount()).toBe(1);
  });

  it('challenge and not-verified outcomes are recorded but never resolve', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    for (const outcome of ['challenge', 'not_verified', 'account_mismatch'] as const) {
      expect((await deliver(await eventFor(episode, { outcome }))).body.applied).toBe(false);
    }
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
    expect(await row("SELECT count(*) AS n FROM ceremony_events WHERE ceremony_id = ?", episode.ceremony_id)).toEqual({ n: 3 });
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
    for (const event of [forged, 'not-a-token', `${(await eventFor(episode)).slice(0, -3)}abc`]) {
      const answer = await deliver(event);
      expect([answer.status, answer.body.error.code]).toEqual([401, 'unauthenticated']);
    }
    const malformed = await call('POST', '/v1/host/ceremony-events', { body: { event: 'x', extra: 1 } });
    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'invalid_request']);
    expect(await counts()).toEqual(before);
    expect((await runState(run.id)).state).toBe('waiting_for_authentication');
  });

  it('a run past its deadline is fenced, not requeued, by a late event', async () => {
    const run = await runningRun('me', 1_000);
    await hitSignInWall(run);
    const episode = await openEpisode();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await deliver(await eventFor(episode))).body.resumed_runs).toEqual([]);
    expect((await runState(run.id)).state).toBe('deadline_exceeded');
  });
});

describe('profile revocation and maintenance', () => {
  it('revoking the profile fences its waits, fails their runs, refuses new runs and later events', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    const revoked = await call('POST', '/v1/profiles/me/revoke', { token: parties.owner.token });
    expect(revoked.body).toMatchObject({ state: 'revoked', fenced_runs: [run.id] });
    expect((await runState(run.id)).state).toBe('failed');
    expect((await deliver(await eventFor(episode))).body.applied).toBe(false);
    const again = await call('POST', '/v1/runs', { token: parties.owner.token, body: { profile_id: 'me', intent: 'x', origins: [ORIGIN] } });
    expect([again.status, again.body.error.code]).toEqual([409, 'profile_revoked']);
  });

  it('the maintenance pass abandons an episode nobody waits for and resolves its notice', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const episode = await openEpisode();
    await call('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token });
    await reconcileSignIns(ports());
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    const notices = (await call('GET', '/v1/notices', { token: parties.owner.token })).body.notices;
    expect(notices[0].resolved_at).not.toBeNull();
  });
});
