import { env } from 'cloudflare:test';
import { eq } from 'drizzle-orm';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import * as schema from '../../../edge/db/schema.ts';
import { proposeToolCall } from '../../../edge/pipeline/propose.ts';
import { hostProfileId } from '../../../edge/profiles/bindings.ts';
import { reconcileSignIns } from '../../../edge/sign-in/maintenance.ts';
import { MAX_SIGN_IN_ATTEMPTS, parkForSignIn } from '../../../edge/sign-in/park.ts';
import type { NoticeList, RunView, SignInList } from '../../../shared/api.ts';
import { signCeremonyEvent } from '../../../shared/authentication.ts';
import { backgroundSettled, call, callError, partiesForEachTest, row, workerdPorts } from '../support/edge-client.ts';
import { hostBeginChecks, hostPage, scriptedHost } from '../support/fake-host.ts';
import { APP, claimsFor, definitionEvent, deliver, ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Parking a run that meets a sign-in wall, against the real D1 in workerd. The host is
// unreachable here (a closed port) unless a stand-in answers: parking still records the wait and
// the owner's one notice. The real host and Chromium are exercised end to end in
// test/e2e/sign-in.test.ts.

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode, runState, noticeCount } = signInFixture(parties);
const ports = workerdPorts;

describe('parking for sign-in', () => {
  it('a run that meets a sign-in wall waits with a persisted wait, no lease, and the owner gets one notice', async () => {
    const run = await runningRun();
    await hitSignInWall(run);
    const view = await runState(run.id);
    expect(view.state).toBe('waiting_for_authentication');
    expect(view.latest_revision).toBeNull();
    expect(view.authentication).toMatchObject({ origin: ORIGIN, generation: 1 });
    expect(view.authentication!.question).toContain('Sign in to');
    const wait = await row('SELECT * FROM sign_in_waits WHERE run_id = ?', run.id);
    expect(wait).toMatchObject({ state: 'pending', host_profile_id: await hostProfileId(parties.owner.id, 'me'), origin: ORIGIN });
    expect(await row('SELECT lease_id FROM runs WHERE id = ?', run.id)).toEqual({ lease_id: null });
    expect(await noticeCount()).toBe(1);
    const proposal = await callError('POST', `/v1/runs/${run.id}/tool-calls`, {
      token: parties.agent.token,
      body: { tool: 'browser.observe', version: '1.2.0', arguments: {} },
    });
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
    const list = await call<SignInList>('GET', '/v1/sign-ins?state=open', { token: parties.owner.token });
    expect(list.body.sign_ins[0]!.waiting_runs.sort()).toEqual([first.id, second.id].sort());
  });

  it('a run joining an episode whose ceremony ended without a sign-in opens a newer generation, not a second notice', async () => {
    const first = await runningRun();
    await hitSignInWall(first);
    const episode = await openEpisode();
    expect((await deliver(await definitionEvent(episode, { outcome: 'not_verified' }))).body.applied).toBe(false);
    const second = await runningRun();
    await hitSignInWall(second);
    const again = await openEpisode();
    expect([again.id, again.generation]).toEqual([episode.id, episode.generation + 1]);
    expect(again.ceremony_id).not.toBe(episode.ceremony_id);
    expect(await noticeCount()).toBe(1);
    expect((await deliver(await definitionEvent(again))).body.resumed_runs.sort()).toEqual([first.id, second.id].sort());
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

describe('the ceremony the edge begins is one the host can carry out', () => {
  it('a wall met after a cross-origin redirect (app -> identity provider) begins a ceremony the host accepts', async () => {
    // The protected page of the ceremony must be on the wall's origin, where the redirect ended,
    // not the navigation target on the app's origin: the host refuses a protected_url of another
    // origin (invalid_params), so such a ceremony could never begin and every maintenance pass
    // would retry it and fail the same way.
    const host = scriptedHost((method, params) => {
      if (method === 'ceremony.begin') {
        hostBeginChecks(params);
        return { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
      }
      if (method === 'ceremony.status') return { ceremony_id: params.ceremony_id, state: 'unknown' };
      return { ended: false };
    });
    const run = await runningRun({ origins: [APP, ORIGIN] });
    await parkForSignIn(ports(host.connector), run, {
      signal: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
      signInUrl: `${ORIGIN}/login?return=${encodeURIComponent(`${APP}/reports`)}`,
      protectedUrl: `${APP}/reports`, // the navigation target, as dispatch passes it for browser.navigate {url: APP/reports}
      toolCallId: 'call_test',
    });
    await backgroundSettled(); // the ceremony begins after the park answered
    expect((await row('SELECT state FROM runs WHERE id = ?', run.id))?.state).toBe('waiting_for_authentication');
    await reconcileSignIns(ports(host.connector));
    // The host must have accepted a begin: its state is known to the edge.
    const episode = await row(
      'SELECT ceremony_state, protected_url, origin FROM sign_in_episodes WHERE id = (SELECT episode_id FROM sign_in_waits WHERE run_id = ?)',
      run.id,
    );
    expect(episode?.ceremony_state).toBe('awaiting_person');
  });
});

describe('a park that did not happen leaves nothing behind', () => {
  it('a wall reported after the run left `running` (e.g. a newer call parked it for approval) opens no pending wait that later captures the run', async () => {
    const run = await runningRun({ origins: [APP, ORIGIN] });
    // Between recording the call's outcome and parking for sign-in the run left `running`:
    await env.DB.prepare("UPDATE runs SET state = 'waiting_for_approval' WHERE id = ?").bind(run.id).run();
    await hitSignInWall(run, { origin: APP });
    expect((await row('SELECT state FROM runs WHERE id = ?', run.id))?.state).toBe('waiting_for_approval');
    // Nothing parked, so nothing waits:
    expect(await row("SELECT count(*) AS n FROM sign_in_waits WHERE run_id = ? AND state = 'pending'", run.id)).toEqual({ n: 0 });

    // Later the run (approved, running again) meets a real wall on ORIGIN: it must wait on ORIGIN's
    // episode, and the owner must be told about ORIGIN.
    await env.DB.prepare("UPDATE runs SET state = 'running' WHERE id = ?").bind(run.id).run();
    await hitSignInWall({ ...run, state: 'running' }, { origin: ORIGIN });
    const wait = await row("SELECT w.origin FROM sign_in_waits w WHERE w.run_id = ? AND w.state = 'pending'", run.id);
    expect(wait?.origin).toBe(ORIGIN);
    const notices = (await call<NoticeList>('GET', '/v1/notices', { token: parties.owner.token })).body.notices;
    expect(notices.some((n) => n.text.includes(ORIGIN))).toBe(true);
  });
});

describe('a host answer the edge refuses does not break parking', () => {
  it('a ceremony.begin answer whose event the edge does not accept (host clock a minute ahead) still parks the run and notifies the owner', async () => {
    // An event the edge refuses, inside the host's answer to the begin, must not make parking
    // throw: the call was already recorded, so the agent would get 401 on its own valid proposal
    // and the owner's one notice would never be inserted.
    const key = new TextEncoder().encode(env.HOST_SHARED_SECRET);
    const host = scriptedHost(async (method, params) => {
      if (method !== 'ceremony.begin') return { ceremony_id: params.ceremony_id, state: 'unknown' };
      const episode = await row('SELECT * FROM sign_in_episodes WHERE ceremony_id = ?', params.ceremony_id);
      const claims = claimsFor({
        ceremony_id: String(params.ceremony_id),
        generation: Number(params.generation),
        host_profile_id: String(episode?.host_profile_id),
      });
      // Beyond the 30 s of skew the edge tolerates.
      const ahead = Math.floor(Date.now() / 1000) + 60;
      const event = await new SignJWT({ ...claims, typ: 'ceremony-outcome' })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer('browser-host')
        .setAudience('edge')
        .setIssuedAt(ahead)
        .setExpirationTime(ahead + 600)
        .sign(key);
      return { ceremony_id: params.ceremony_id, state: 'verified', event };
    });
    const run = await runningRun();
    let thrown: unknown;
    try {
      await hitSignInWall(run, { origin: ORIGIN, ports: ports(host.connector) });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeUndefined();
    expect((await row('SELECT state FROM runs WHERE id = ?', run.id))?.state).toBe('waiting_for_authentication');
    expect((await call<NoticeList>('GET', '/v1/notices', { token: parties.owner.token })).body.notices).toHaveLength(1);
  });
});

describe('repeated sign-in walls are bounded by semantic progress, not by revision churn (ADR-0164 part 4)', () => {
  it(`a run that meets the same wall again after every resumption ends after ${MAX_SIGN_IN_ATTEMPTS} waits, even though each resumption's first read succeeds`, async () => {
    // The mandatory fresh read after each resumption is a successful call without a sign-in
    // signal; if any such call reset the run's count of sign-in attempts, a wall that returns on
    // every attempt (e.g. a step-up password prompt while the saved session is valid, so the host
    // verifies at once and the owner is never asked) would loop until the deadline.
    let revision = 0;
    const host = scriptedHost(async (method, params) => {
      switch (method) {
        case 'lease.acquire':
        case 'lease.renew':
          return { lease_id: 'lease_review0001', profile_id: String(params.profile_id ?? 'p'), generation: 1, expires_at_ms: Date.now() + 300_000 };
        case 'page.observe':
          return hostPage(`${ORIGIN}/reports`, ++revision);
        case 'page.navigate':
          return {
            ...hostPage(`${ORIGIN}/signin`, ++revision),
            sign_in: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
          };
        case 'ceremony.begin': {
          const event = await signCeremonyEvent(
            env.HOST_SHARED_SECRET,
            claimsFor({ ceremony_id: String(params.ceremony_id), generation: Number(params.generation), host_profile_id: String(params.profile_id) }),
          );
          return { ceremony_id: params.ceremony_id, state: 'verified', event };
        }
        default:
          return { released: true };
      }
    });
    const p = ports(host.connector);
    const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
    const created = await call<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      body: { profile_id: 'loop', intent: 'file the weekly report', origins: [ORIGIN] },
    });
    const runId = created.body.id;
    const load = async () => (await p.db.select().from(schema.runs).where(eq(schema.runs.id, runId)).get())!;
    let walls = 0;
    for (let cycle = 0; cycle < MAX_SIGN_IN_ATTEMPTS + 3; cycle++) {
      if (!['queued', 'running'].includes((await load()).state)) break;
      await proposeToolCall(p, agent, await load(), { tool: 'browser.observe', version: '1.2.0', arguments: {} });
      if (!['queued', 'running'].includes((await load()).state)) break;
      await proposeToolCall(p, agent, await load(), {
        tool: 'browser.navigate',
        version: '1.2.0',
        arguments: { url: `${ORIGIN}/reports/new?attempt=${cycle}` },
      });
      await backgroundSettled(); // the ceremony begins after the proposal answered
      walls += 1;
    }
    const run = await load();
    expect(walls).toBeLessThanOrEqual(MAX_SIGN_IN_ATTEMPTS + 1);
    expect(['uncertain', 'partial']).toContain(run.state);
  });
});
