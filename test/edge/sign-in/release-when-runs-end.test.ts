import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../../edge/app.ts';
import type { Principal } from '../../../edge/auth/principal.ts';
import type { Ports } from '../../../edge/ports.ts';
import { driveRecipeRun } from '../../../edge/recipes/drive.ts';
import { driveDueRecipeRuns } from '../../../edge/recipes/scheduling.ts';
import { createRun, loadRun } from '../../../edge/runs/lifecycle.ts';
import { reconcileSignIns } from '../../../edge/sign-in/maintenance.ts';
import type { ProfileBindingView, RunView } from '../../../shared/api.ts';
import { MAX_RECIPE_DURATION_MS, type RecipeBody } from '../../../shared/recipes.ts';
import { backgroundSettled, call, type ErrorBody, partiesForEachTest, row, workerdPorts } from '../support/edge-client.ts';
import { hostPage, scriptedHost } from '../support/fake-host.ts';
import { ORIGIN, signInFixture } from '../support/sign-in-fixture.ts';

// Issue 32, "nothing held by what is over": a sign-in episode's ceremony holds a browser on the
// profile's host while the person signs in. Once no run waits on it any more (cancelled, past its
// deadline, its profile revoked, its recipe past its 15-minute limit), that browser is released
// in the same request or pass, not at the next maintenance pass.

const parties = partiesForEachTest();
const { runningRun, hitSignInWall, openEpisode, notices } = signInFixture(parties);

/**
 * A host whose ceremonies wait for the person until `ceremony.end`, and whose every page on
 * ORIGIN is its sign-in wall (a recipe run's first read parks it); the commands it got are kept.
 */
function ceremonyHost() {
  let revision = 0;
  return scriptedHost((method, params) => {
    if (method === 'ceremony.begin' || method === 'ceremony.status') return { ceremony_id: params.ceremony_id, state: 'awaiting_person' };
    if (method === 'ceremony.end') return { ended: true };
    if (method === 'lease.acquire')
      return { lease_id: 'lease_release00001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    if (method === 'lease.release') return { released: true };
    if (method === 'page.navigate' || method === 'page.observe')
      return {
        ...hostPage(`${ORIGIN}/signin`, ++revision),
        sign_in: { origin: ORIGIN, reasons: [{ code: 'password_field', detail: 'a visible password field' }] },
      };
    throw new Error(`unexpected ${method}`);
  });
}

/** The Worker's app over the real D1 with `ports` (a stand-in host), answering `{status, body}`. */
function appWith(ports: () => Ports) {
  const app = createApp(ports);
  return async <Body>(method: string, path: string, token: string) => {
    const response = await app.request(`http://edge.test${path}`, { method, headers: { Authorization: `Bearer ${token}` } });
    return { status: response.status, body: (await response.json()) as Body };
  };
}

/** The ceremonies `host` was told to end. */
function endedCeremonies(host: ReturnType<typeof ceremonyHost>): unknown[] {
  return host.calls.filter((sent) => sent.method === 'ceremony.end').map((sent) => sent.params.ceremony_id);
}

describe("a run's end releases the browser of the sign-in it waited for", () => {
  it('a cancelled run that waited for a sign-in nobody else waits for ends the episode and its ceremony on the host at once', async () => {
    const host = ceremonyHost();
    const ports = () => workerdPorts(host.connector);
    const request = appWith(ports);
    const run = await runningRun({ profile: 'cancelled' });
    await hitSignInWall(run, { ports: ports() });
    const episode = await openEpisode('cancelled');
    expect(episode.ceremony_state).toBe('awaiting_person');

    const cancelled = await request<RunView>('POST', `/v1/runs/${run.id}/cancel`, parties.owner.token);
    expect([cancelled.status, cancelled.body.state]).toEqual([200, 'cancelled']);
    // The edge counts the slot free before the answer; the host is told right after it.
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    expect((await notices())[0]!.resolved_at).not.toBeNull();
    await backgroundSettled();
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });

  it('a run past its deadline while it waited for a sign-in ends the episode and its ceremony on the host when it is next read', async () => {
    const host = ceremonyHost();
    const ports = () => workerdPorts(host.connector);
    const request = appWith(ports);
    const run = await runningRun({ profile: 'expired' });
    await hitSignInWall(run, { ports: ports() });
    const episode = await openEpisode('expired');
    await env.DB.prepare('UPDATE runs SET deadline_at = ? WHERE id = ?')
      .bind(Date.now() - 1, run.id)
      .run();

    const read = await request<RunView>('GET', `/v1/runs/${run.id}`, parties.owner.token);
    expect([read.status, read.body.state]).toEqual([200, 'deadline_exceeded']);
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    await backgroundSettled();
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });

  it('an episode another run still waits on is kept, with its ceremony, until that run ends too', async () => {
    const host = ceremonyHost();
    const ports = () => workerdPorts(host.connector);
    const request = appWith(ports);
    const first = await runningRun({ profile: 'shared' });
    const second = await runningRun({ profile: 'shared' });
    await hitSignInWall(first, { ports: ports() });
    await hitSignInWall(second, { ports: ports() });
    const episode = await openEpisode('shared');

    expect((await request('POST', `/v1/runs/${first.id}/cancel`, parties.owner.token)).status).toBe(200);
    await backgroundSettled();
    expect(await row('SELECT state, ceremony_state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({
      state: 'open',
      ceremony_state: 'awaiting_person',
    });
    expect(endedCeremonies(host)).toEqual([]);

    expect((await request('POST', `/v1/runs/${second.id}/cancel`, parties.owner.token)).status).toBe(200);
    await backgroundSettled();
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });

  it('a run waiting for a sign-in cannot report (it is not running), so its episode stays for the person', async () => {
    const host = ceremonyHost();
    const ports = () => workerdPorts(host.connector);
    const run = await runningRun({ profile: 'reporting' });
    await hitSignInWall(run, { ports: ports() });
    const episode = await openEpisode('reporting');
    const report = await call<ErrorBody>('POST', `/v1/runs/${run.id}/report`, {
      token: parties.agent.token,
      body: { status: 'failed', summary: 'gave up waiting' },
    });
    expect([report.status, report.body.error.code]).toEqual([409, 'run_not_active']);
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'open' });
  });

  it('a cancel whose host cannot be reached still answers, and the maintenance pass ends the ceremony once the host answers', async () => {
    const host = ceremonyHost();
    const run = await runningRun({ profile: 'unreachable' });
    await hitSignInWall(run, { ports: workerdPorts(host.connector) });
    const episode = await openEpisode('unreachable');

    // Through the Worker itself, whose host binding is a closed port: the host cannot be reached.
    const cancelled = await call<RunView>('POST', `/v1/runs/${run.id}/cancel`, { token: parties.owner.token });
    expect([cancelled.status, cancelled.body.state]).toEqual([200, 'cancelled']);
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });

    await reconcileSignIns(workerdPorts(host.connector));
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
    // Told once it answered: the next pass leaves the host alone.
    await reconcileSignIns(workerdPorts(host.connector));
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });
});

describe('revocation and the recipe limit release the browser of the sign-in their runs waited for', () => {
  it("revoking the profile ends its open episode's ceremony on the host at once", async () => {
    const host = ceremonyHost();
    const ports = () => workerdPorts(host.connector);
    const request = appWith(ports);
    const run = await runningRun({ profile: 'revoked' });
    await hitSignInWall(run, { ports: ports() });
    const episode = await openEpisode('revoked');
    expect(episode.ceremony_state).toBe('awaiting_person');

    const revoked = await request<ProfileBindingView>('POST', '/v1/profiles/revoked/revoke', parties.owner.token);
    expect([revoked.status, revoked.body.fenced_runs]).toEqual([200, [run.id]]);
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'revoked' });
    await backgroundSettled();
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
    expect(await row('SELECT ceremony_state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ ceremony_state: 'ended' });
  });

  it('a revocation whose host cannot be reached still answers, and the maintenance pass ends the ceremony once the host answers', async () => {
    const host = ceremonyHost();
    const run = await runningRun({ profile: 'revoked-unreachable' });
    await hitSignInWall(run, { ports: workerdPorts(host.connector) });
    const episode = await openEpisode('revoked-unreachable');

    // Through the Worker itself, whose host binding is a closed port: the host cannot be reached.
    const revoked = await call<ProfileBindingView>('POST', '/v1/profiles/revoked-unreachable/revoke', { token: parties.owner.token });
    expect([revoked.status, revoked.body.state]).toEqual([200, 'revoked']);
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'revoked' });

    await reconcileSignIns(workerdPorts(host.connector));
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
    await reconcileSignIns(workerdPorts(host.connector));
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });

  it("a recipe run stopped at the recipe's 15-minute limit while it waited for a sign-in ends the episode and its ceremony on the host", async () => {
    const recipe: RecipeBody = {
      enabled: true,
      reviewed_fixture: 'test/edge/sign-in/release-when-runs-end.test.ts',
      origin: ORIGIN,
      phrases: ['Open the reports'],
      start_path: '/reports',
      steps: [
        {
          title: 'Open the reports',
          expect: { kind: 'control', role: 'button', name: 'Open' },
          target: { role: 'button', name: 'Open' },
          action: { kind: 'click' },
          postcondition: { success: { kind: 'text', text: 'Reports' }, timeout_ms: 0 },
        },
      ],
    };
    expect((await call('POST', '/v1/recipes/open-reports', { token: parties.operator.token, body: recipe })).status).toBe(201);
    const host = ceremonyHost();
    const clock = { at: Date.now() };
    const base = workerdPorts(host.connector);
    const ports: Ports = { ...base, clock: { now: () => clock.at, sleep: base.clock.sleep } };
    const owner: Principal = { id: parties.owner.id, kind: 'owner', ownerId: parties.owner.id };
    const run = await createRun(ports, owner, { profile_id: 'recipe-limit', intent: 'Open the reports', origins: [ORIGIN], deadline_ms: 3_600_000 });
    expect(run.recipeId).not.toBeNull();
    expect(await driveRecipeRun(ports, run.id)).toBe('parked');
    await backgroundSettled();
    const episode = await openEpisode('recipe-limit');
    expect((await loadRun(ports, owner, run.id)).state).toBe('waiting_for_authentication');

    clock.at += MAX_RECIPE_DURATION_MS + 1_000;
    await driveDueRecipeRuns(ports);
    expect((await loadRun(ports, owner, run.id)).state).toBe('partial');
    expect(await row('SELECT state FROM sign_in_episodes WHERE id = ?', episode.id)).toEqual({ state: 'abandoned' });
    await backgroundSettled();
    expect(endedCeremonies(host)).toEqual([episode.ceremony_id]);
  });
});
