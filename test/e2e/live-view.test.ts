import { describe, expect } from 'vitest';
import { startAccountSite } from '../../scripts/account-site.ts';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { LOCAL_OWNER_ID } from '../../scripts/local-stack.ts';
import { openLiveView, openOwnerConsole, typeCredentials, typeCredentialsInTwoSteps } from '../../scripts/person-in-live-view.ts';
import { GrantView } from '../../shared/api.ts';
import { runReaches, stackTest } from '../support/stack-fixture.ts';

// Signing in from anywhere: the real host (headed, under Xvfb) and the real edge (wrangler dev);
// the owner, in a second Chromium, opens the live view from the console and signs in through it,
// with the keyboard, as a person would.

const it = stackTest({ site: startAccountSite, headless: false, hostVars: { HOST_CEREMONY_POLL_MS: '500' } })
  /** The same site with an identifier-first sign-in (username, then password on the next page); the host has no definition for it. */
  .extend('twoStepSite', { scope: 'file' }, async ({}, { onCleanup }) => {
    const site = await startAccountSite({ signIn: 'identifier-first' });
    onCleanup(() => site.close());
    return site;
  })
  /** The owner's console, signed in with a link the operator issued, in a second Chromium: its page. */
  .extend('page', { scope: 'file' }, async ({ operator }, { onCleanup }) => {
    const ownerConsole = await openOwnerConsole((await operator.consoleLink(LOCAL_OWNER_ID)).url);
    onCleanup(() => ownerConsole.close());
    return ownerConsole.page;
  });

describe('the live view of a sign-in window', () => {
  it('lets the owner sign in from the console: the run resumes by itself and files the report once; the link is single-use and the agent never acts on the window meanwhile', async ({
    site,
    agent,
    owner,
    page,
  }) => {
    const run = await owner.createRun({
      profile_id: 'reports',
      intent: 'File the weekly report titled "Week 49"',
      origins: [site.origin],
      deadline_ms: 600_000,
    });
    await owner.request('POST', '/v1/grants', GrantView, {
      tool: 'browser.act',
      actions: ['type', 'click'],
      origin: site.origin,
      max_uses: 5,
      ttl_ms: 3_600_000,
    });
    const blocked = (await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body;
    expect(blocked.error?.code).toBe('authentication_required');
    const notices = await owner.waitForNotices(run.id);
    expect(notices[0]?.text).toContain('open the live view from Sign-ins in the owner console');

    // The sign-in form is on screen within 2 s of opening the view.
    const firstFrameMs = await openLiveView(page, 30_000);
    expect(firstFrameMs).toBeLessThan(2_000);
    const socketPath = await page.locator('#live-view').getAttribute('data-socket');

    // Meanwhile the agent cannot act on the window: the run waits, and another run of the
    // profile gets no browser; the site sees nothing of either.
    const before = site.counters();
    const during = await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` }).then(
      (answer) => answer.body.state,
      (error: { code?: string }) => error.code,
    );
    expect(during).toBe('run_not_active');
    const other = await owner.createRun({ profile_id: 'reports', intent: 'Look at the reports', origins: [site.origin] });
    const elsewhere = await agent.propose(other.id, 'browser.navigate', { url: `${site.origin}/reports` }).then(
      (answer) => answer.body.state,
      (error: { code?: string }) => error.code,
    );
    expect(elsewhere).not.toBe('succeeded');
    expect(site.counters().protected_loads).toBe(before.protected_loads);
    expect(site.counters().sign_ins).toBe(before.sign_ins);

    // The link was used by this page: it does not connect a second time.
    const second = await page.evaluate(
      (path) =>
        new Promise<string>((resolve) => {
          const socket = new WebSocket(`ws://${location.host}${path}`);
          socket.addEventListener('message', () => resolve('message'));
          socket.addEventListener('close', () => resolve('closed'));
        }),
      socketPath,
    );
    expect(second).toBe('closed');

    await typeCredentials(page, { username: 'alice', password: 'alice-pass' });
    await page.locator('#live-view[data-state="ended"]').waitFor({ timeout: 60_000 });
    expect(await page.locator('#live-status').textContent()).toContain('you are signed in');
    await runReaches(agent, run.id, ['queued']);

    let form = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/reports/new` })).body);
    form = observationOf(
      (
        await agent.propose(run.id, 'browser.act', {
          action: 'type',
          revision: form.revision,
          reference: refOf(form.snapshot, 'textbox', 'Title'),
          text: 'Week 49',
        })
      ).body,
    );
    const filed = (
      await agent.propose(run.id, 'browser.act', {
        action: 'click',
        revision: form.revision,
        reference: refOf(form.snapshot, 'button', 'File report'),
        postcondition: { success: { kind: 'text', text: 'Week 49' } },
      })
    ).body;
    expect(filed.state).toBe('succeeded');
    expect(site.counters().reports_filed).toBe(1);
    await agent.report(run.id, 'completed', 'Filed "Week 49" after the owner signed in through the live view.');
    await agent.report(other.id, 'failed', 'the profile was busy').catch(() => undefined);
  });

  it('an act that lands on the sign-in wall is verified against the page the sign-in page says it protects, not the public page before it, and resumes by itself', async ({
    stack,
    site,
    agent,
    owner,
    page,
  }) => {
    const run = await owner.createRun({
      profile_id: 'public-first',
      intent: 'Open my reports from the about page',
      origins: [site.origin],
      deadline_ms: 600_000,
    });
    await owner.request('POST', '/v1/grants', GrantView, { tool: 'browser.act', actions: ['click'], origin: site.origin, max_uses: 3, ttl_ms: 3_600_000 });
    const about = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${site.origin}/public` })).body);
    const clicked = (
      await agent.propose(run.id, 'browser.act', { action: 'click', revision: about.revision, reference: refOf(about.snapshot, 'link', 'Your reports') })
    ).body;
    expect(clicked.state).toBe('succeeded');
    expect((await agent.run(run.id)).state).toBe('waiting_for_authentication');
    const [episodes] = await stack.queryD1(`SELECT protected_url FROM sign_in_episodes WHERE profile_id = 'public-first' AND state = 'open'`);
    expect(episodes?.[0]?.protected_url).toBe(`${site.origin}/reports`);
    await openLiveView(page, 30_000);
    await typeCredentials(page, { username: 'alice', password: 'alice-pass' });
    await page.locator('#live-view[data-state="ended"]').waitFor({ timeout: 60_000 });
    await runReaches(agent, run.id, ['queued']);
    await agent.report(run.id, 'completed', 'opened the reports after the owner signed in');
  });

  it('an act that lands on an identifier-first wall of a site without a definition is verified against the return URL after the person signs in in two steps, and resumes by itself', async ({
    stack,
    twoStepSite,
    agent,
    owner,
    page,
  }) => {
    const run = await owner.createRun({
      profile_id: 'two-step',
      intent: 'Open my reports from the about page',
      origins: [twoStepSite.origin],
      deadline_ms: 600_000,
    });
    await owner.request('POST', '/v1/grants', GrantView, {
      tool: 'browser.act',
      actions: ['click'],
      origin: twoStepSite.origin,
      max_uses: 3,
      ttl_ms: 3_600_000,
    });
    const about = observationOf((await agent.propose(run.id, 'browser.navigate', { url: `${twoStepSite.origin}/public` })).body);
    const clicked = (
      await agent.propose(run.id, 'browser.act', { action: 'click', revision: about.revision, reference: refOf(about.snapshot, 'link', 'Your reports') })
    ).body;
    expect(clicked.state).toBe('succeeded');
    const parked = await agent.run(run.id);
    expect(parked.state).toBe('waiting_for_authentication');
    // No password field on the page: the identifier form, its heading and the redirect decided it.
    expect(parked.authentication?.reasons.map((reason) => reason.code).sort()).toEqual(['identifier_form', 'redirected_with_return_url', 'sign_in_heading']);
    const [episodes] = await stack.queryD1(`SELECT id, protected_url FROM sign_in_episodes WHERE profile_id = 'two-step' AND state = 'open'`);
    expect(episodes?.[0]?.protected_url).toBe(`${twoStepSite.origin}/reports`);
    const signInsBefore = twoStepSite.counters().sign_ins;

    await openLiveView(page, 30_000);
    await typeCredentialsInTwoSteps(page, { username: 'alice', password: 'alice-pass' });
    await page.locator('#live-view[data-state="ended"]').waitFor({ timeout: 60_000 });
    expect(await page.locator('#live-status').textContent()).toContain('you are signed in');
    await runReaches(agent, run.id, ['queued']);
    expect(twoStepSite.counters().sign_ins).toBe(signInsBefore + 1);
    // One episode for both steps: the run never parked on the password page.
    const [all] = await stack.queryD1(`SELECT state FROM sign_in_episodes WHERE profile_id = 'two-step'`);
    expect(all?.map((episode) => episode.state)).toEqual(['resolved']);

    await agent.report(run.id, 'completed', 'opened the reports after the owner signed in in two steps');
  });
});
