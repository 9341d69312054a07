import { decodeJwt } from 'jose';
import { describe, expect, vi } from 'vitest';
import { DELIVERY_BACKOFF_MS } from '../../browser-host/ceremony/delivery.ts';
import { type AccountSite, accountSiteDefinition, startAccountSite } from '../../scripts/account-site.ts';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { plantCookie } from '../../scripts/person-at-browser.ts';
import { GrantView, SignInList } from '../../shared/api.ts';
import { connectHost } from '../support/host-client.ts';
import { hostProfileDir, personSignsIn, runReaches, type Stacked, stackTest } from '../support/stack-fixture.ts';

// ADR-0164 parts 2-4 in real processes and real Chromium: the edge under `wrangler dev` with a
// local D1, the browser host headed under Xvfb with the reviewed fixture definition enabled, and
// the controlled report/account site. The "person" signs in through the host's own headed
// window (scripts/person-at-browser.ts); nothing else touches the browser.

const it = stackTest({
  site: startAccountSite,
  siteDefinitions: (site) => [accountSiteDefinition(site.origin)],
  hostVars: { HOST_PERSON_DEBUGGING: '1', HOST_CEREMONY_POLL_MS: '500' },
});

/** The first row of one read-only statement against the edge's database. */
async function firstRow(stack: LocalStack, statement: string): Promise<Record<string, unknown> | undefined> {
  const [rows] = await stack.queryD1(statement);
  return rows?.[0];
}

/** An owner's run on `profile` over the account site; the agent claims it with its first call. */
function newRun({ owner, site }: Pick<Stacked<AccountSite>, 'owner' | 'site'>, profile: string, intent = 'File the weekly report titled "Week 48"') {
  return owner.createRun({ profile_id: profile, intent, origins: [site.origin], deadline_ms: 600_000 });
}

async function ceremonyOf(stack: LocalStack, profile: string) {
  const [rows] = await stack.queryD1(
    `SELECT id, ceremony_id, generation FROM sign_in_episodes WHERE profile_id = '${profile}' ORDER BY opened_at DESC LIMIT 1`,
  );
  return rows![0] as { id: string; ceremony_id: string; generation: number };
}

async function hostCeremonyState(stack: LocalStack, ceremonyId: string) {
  const host = await connectHost(stack.hostUrl, stack.hostSecret);
  try {
    return await host.call('ceremony.status', { ceremony_id: ceremonyId });
  } finally {
    await host.close();
  }
}

describe('a run that meets a sign-in wall', () => {
  it('parks, the owner signs in once in the headed browser, and it resumes by itself without a second prompt', async ({
    stack,
    site,
    agent,
    owner,
    ownerId,
  }) => {
    const run = await newRun({ owner, site }, 'reporter');
    // The owner's grant covers the routine writes (typing the title, filing): no approvals.
    await owner.request('POST', '/v1/grants', GrantView, {
      tool: 'browser.act',
      actions: ['type', 'click'],
      origin: site.origin,
      max_uses: 10,
      ttl_ms: 3_600_000,
    });

    const blocked = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body;
    expect(blocked).toMatchObject({ state: 'failed', error: { code: 'authentication_required' }, retryable: true });
    const waiting = await agent.run(run.id);
    expect(waiting.state).toBe('waiting_for_authentication');
    expect(waiting.authentication?.origin).toBe(site.origin);
    // The ceremony begins after the proposal answered; its one notice follows.
    expect(await owner.waitForNotices(run.id)).toHaveLength(1);

    const signInsBefore = site.counters().sign_ins;
    await personSignsIn({ stack, site, ownerId }, 'reporter', 'alice');
    await runReaches(agent, run.id, ['queued']);
    expect(site.counters().sign_ins).toBe(signInsBefore + 1);

    // Fresh lease and fresh read, then the report is filed exactly once.
    let page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body);
    expect(page.url).toBe(`${site.origin}/reports/new`);
    const typed = await agent.propose(run.id, 'browser.act', {
      action: 'type',
      revision: page.revision,
      reference: refOf(page.snapshot, 'textbox', 'Title'),
      text: 'Week 48',
    });
    expect(typed.body.state).toBe('succeeded');
    page = observationOf(typed.body);
    const filed = await agent.propose(run.id, 'browser.act', {
      action: 'click',
      revision: page.revision,
      reference: refOf(page.snapshot, 'button', 'File report'),
      postcondition: { success: { kind: 'text', text: 'Week 48' } },
    });
    expect(filed.body).toMatchObject({ state: 'succeeded', result: { condition: { status: 'satisfied' } } });
    expect(site.counters().reports_filed).toBe(1);
    expect(site.counters().filed['alice@example.test']).toEqual(['Week 48']);

    const notices = await owner.noticesFor(run.id);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.resolved_at).not.toBeNull();
    const [approvals] = await stack.queryD1(`SELECT count(*) AS n FROM approvals WHERE run_id = '${run.id}'`);
    expect(approvals).toEqual([{ n: 0 }]);
    const activity = (await owner.raw('GET', `/v1/runs/${run.id}/activity`)).body as { activity: { kind: string; summary: string }[] };
    expect(activity.activity.map((a) => a.kind)).toEqual(expect.arrayContaining(['sign_in_wait', 'ceremony_event']));
    const [messages] = await stack.queryD1(`SELECT count(*) AS n FROM messages WHERE run_id = '${run.id}'`);
    expect(messages).toEqual([{ n: 1 }]); // the intent only: nothing was said on anyone's behalf

    // The host's event delivered again (as its status answers it) changes nothing.
    const episode = await ceremonyOf(stack, 'reporter');
    const status = await hostCeremonyState(stack, episode.ceremony_id);
    expect(status.state).toBe('verified');
    const replay = await agent.raw('POST', '/v1/host/ceremony-events', { event: status.event });
    expect(replay).toMatchObject({ status: 200, body: { applied: false, resumed_runs: [] } });
    expect((await agent.run(run.id)).state).toBe('running');

    // The session expires mid-run: a new episode, one new notice; after the second sign-in the
    // run continues, and the report filed before is never filed again.
    site.expireSessions();
    // (A URL no earlier result showed: navigating to one the pages showed needs the owner.)
    const again = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports?week=48` })).body;
    expect(again.error?.code).toBe('authentication_required');
    await owner.waitForNotices(run.id, 2);
    await personSignsIn({ stack, site, ownerId }, 'reporter', 'alice');
    await runReaches(agent, run.id, ['queued']);
    const after = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports?week=48` })).body);
    expect(after.snapshot).toContain('Week 48');
    expect(site.counters().reports_filed).toBe(1);
    expect(await owner.noticesFor(run.id)).toHaveLength(2);
    expect((await agent.report(run.id, 'completed', 'Filed "Week 48" once.')).state).toBe('completed');

    // A later run on the same profile reuses the valid session: no wall, no notice.
    const later = await newRun({ owner, site }, 'reporter', 'Read my reports');
    const read = (await agent.propose(later.id, 'browser.navigate', { url: `${site.origin}/reports` })).body;
    expect(read.state).toBe('succeeded');
    expect(observationOf(read).snapshot).toContain('Week 48');
    expect(await owner.noticesFor(later.id)).toHaveLength(0);
    await agent.report(later.id, 'completed', 'One report: Week 48.');
  });

  it('a lost callback is recovered by the cron pass after the edge process restarted', async ({ stack, site, agent, owner, ownerId }) => {
    const run = await newRun({ owner, site }, 'recovery');
    const blocked = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports` })).body;
    expect(blocked.error?.code).toBe('authentication_required');
    const episode = await ceremonyOf(stack, 'recovery');
    // The host has begun the ceremony (the notice follows its begin) before the edge goes away.
    await owner.waitForNotices(run.id);

    await stack.stopEdge();
    await personSignsIn({ stack, site, ownerId }, 'recovery', 'bob');
    // The host verified and tried to call back while nobody listened; the edge comes back only
    // after the host's last delivery attempt (a quick restart would still catch that one).
    await vi.waitFor(async () => expect((await hostCeremonyState(stack, episode.ceremony_id)).state).toBe('verified'), { timeout: 60_000, interval: 500 });
    const verified = await hostCeremonyState(stack, episode.ceremony_id);
    const decidedAt = decodeJwt(verified.event!).decided_at_ms as number;
    const lastAttemptAt = decidedAt + DELIVERY_BACKOFF_MS.reduce((total, delay) => total + delay, 0) + 1_000;
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(lastAttemptAt), { timeout: 10_000, interval: 250 });
    await stack.startEdge();
    expect((await agent.run(run.id)).state).toBe('waiting_for_authentication');

    await stack.triggerCron();
    await runReaches(agent, run.id, ['queued'], 30_000);
    const page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports` })).body);
    expect(page.snapshot).toContain('Signed in as bob@example.test');
    const event = await firstRow(stack, `SELECT via, applied FROM ceremony_events WHERE ceremony_id = '${episode.ceremony_id}' AND outcome = 'verified'`);
    expect(event).toEqual({ via: 'reconciliation', applied: 1 });
    expect(await owner.noticesFor(run.id)).toHaveLength(1);
    // Ending the run gives its browser back: the next tests' verifications need the room.
    await agent.report(run.id, 'completed', 'Signed in as bob; no reports.');
  });

  it('a challenge page never counts as signed in', async ({ stack, site, agent, owner, ownerId }) => {
    const run = await newRun({ owner, site }, 'challenged');
    expect((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports` })).body.error?.code).toBe('authentication_required');
    const episode = await ceremonyOf(stack, 'challenged');
    await owner.waitForNotices(run.id);
    await personSignsIn({ stack, site, ownerId }, 'challenged', 'carol');
    await vi.waitFor(async () => expect((await hostCeremonyState(stack, episode.ceremony_id)).state).toBe('challenge'), { timeout: 60_000, interval: 500 });
    await stack.triggerCron();
    // On Workers the trigger answers before the pass (ctx.waitUntil) has asked the host: wait for its record.
    await vi.waitFor(
      async () => {
        const signIns = (await owner.request('GET', '/v1/sign-ins?state=open', SignInList)).body.sign_ins.find((s) => s.id === episode.id);
        expect(signIns?.ceremony_state).toBe('challenge');
      },
      { timeout: 30_000, interval: 500 },
    );
    expect((await agent.run(run.id)).state).toBe('waiting_for_authentication');
    expect(await owner.noticesFor(run.id)).toHaveLength(1);
    // Nobody waits once the run is cancelled: the cancel abandons the episode and ends the
    // ceremony (the cron pass would, had the host been out of reach), which gives the profile's
    // browser back to admission.
    await owner.raw('POST', `/v1/runs/${run.id}/cancel`);
    await stack.triggerCron();
    await vi.waitFor(async () => expect((await hostCeremonyState(stack, episode.ceremony_id)).state).toBe('ended'), { timeout: 30_000, interval: 500 });
    const abandoned = await firstRow(stack, `SELECT state FROM sign_in_episodes WHERE id = '${episode.id}'`);
    expect(abandoned).toEqual({ state: 'abandoned' });
  });

  it('a cookie planted without a session does not count as signed in', async ({ stack, site, agent, owner, ownerId }) => {
    // The profile's browser exists once a run has used it; plant the cookie there first.
    const run = await newRun({ owner, site }, 'planted');
    const first = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/public` })).body;
    expect(first.state).toBe('succeeded');
    await plantCookie({ profileDir: await hostProfileDir({ stack, ownerId }, 'planted'), origin: site.origin, name: 'sid', value: 'forged-session-id' });
    // The public page links to the reports: the owner names them, so the navigation is the owner's, not the page's.
    await owner.raw('POST', `/v1/runs/${run.id}/messages`, { text: 'now open the reports' });
    const blocked = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports` })).body;
    expect(blocked.error?.code).toBe('authentication_required');
    const episode = await ceremonyOf(stack, 'planted');
    await vi.waitFor(async () => expect((await hostCeremonyState(stack, episode.ceremony_id)).state).toBe('awaiting_person'), {
      timeout: 30_000,
      interval: 500,
    });
    expect((await agent.run(run.id)).state).toBe('waiting_for_authentication');
    expect(await owner.waitForNotices(run.id)).toHaveLength(1);
    // Cancelling ends the wait at once, with no cron pass (issue 32: nothing held by what is
    // over): the sign-in window closes on the host and the run stays cancelled.
    await owner.raw('POST', `/v1/runs/${run.id}/cancel`);
    await vi.waitFor(async () => expect((await hostCeremonyState(stack, episode.ceremony_id)).state).toBe('ended'), { timeout: 30_000, interval: 500 });
    expect(await firstRow(stack, `SELECT state FROM sign_in_episodes WHERE id = '${episode.id}'`)).toEqual({ state: 'abandoned' });
    expect((await agent.run(run.id)).state).toBe('cancelled');
  });
});
