import type { Page } from 'playwright-core';
import { describe, expect } from 'vitest';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { LOCAL_OWNER_ID } from '../../scripts/local-stack.ts';
import { openLiveView, openOwnerConsole, pressKeys, typeText, waitForQuietScreen } from '../../scripts/person-in-live-view.ts';
import type { ActivityList } from '../../shared/api.ts';
import { seriousViolations } from '../support/accessibility.ts';
import { type IdentityProviderSite, startIdentityProviderSite } from '../support/identity-provider-site.ts';
import { stackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// Signing in through an identity provider on another origin (DESIGN.md section 18), with real
// sign-in software (oidc-provider and Auth.js, test/support/identity-provider-site.ts), the real
// edge (wrangler dev) and the real host (headed, under Xvfb): the agent's navigation meets the
// site's sign-in wall, the owner signs in through the live view at the provider and comes back,
// the run resumes by itself, and nothing of the provider reaches the agent.

/**
 * The file's sites, each an Acme Reports site with its own Acme ID provider:
 * - `plain`: its provider allowed for egress and for sign-in;
 * - `twoHop`: the same with a second provider page (a one-time code) and an account chooser back
 *   on the site;
 * - `unallowed`: its provider on a loopback address the operator did not allow (a sign-in origin);
 * - `notSignIn`: its provider allowed for egress but not among the host's sign-in origins.
 */
interface Sites {
  readonly plain: IdentityProviderSite;
  readonly twoHop: IdentityProviderSite;
  readonly unallowed: IdentityProviderSite;
  readonly notSignIn: IdentityProviderSite;
  close(): Promise<void>;
}

async function startSites(): Promise<Sites> {
  const plain = await startIdentityProviderSite();
  const twoHop = await startIdentityProviderSite({ twoHop: true, handBack: true });
  const unallowed = await startIdentityProviderSite({ providerHost: '127.0.0.3' });
  const notSignIn = await startIdentityProviderSite();
  return {
    plain,
    twoHop,
    unallowed,
    notSignIn,
    close: async () => {
      for (const site of [plain, twoHop, unallowed, notSignIn]) await site.close();
    },
  };
}

const it = stackTest<Sites>({
  site: startSites,
  headless: false,
  hostVarsOf: (sites) => ({
    HOST_CEREMONY_POLL_MS: '500',
    HOST_EGRESS_ALLOW: [sites.plain, sites.twoHop, sites.notSignIn].map((s) => s.providerOrigin).join(','),
    HOST_SIGN_IN_ORIGINS: [sites.plain, sites.twoHop, sites.unallowed].map((s) => s.providerOrigin).join(','),
  }),
})
  /** The owner's console, signed in with a link the operator issued, in a second Chromium: its page. */
  .extend('page', { scope: 'file' }, async ({ operator }, { onCleanup }) => {
    const ownerConsole = await openOwnerConsole((await operator.consoleLink(LOCAL_OWNER_ID)).url);
    onCleanup(() => ownerConsole.close());
    return ownerConsole.page;
  });

/** What the file's helpers use of a test's fixtures. */
interface Person {
  readonly agent: ApiClient;
  readonly owner: ApiClient;
  readonly page: Page;
}

/** A run of the owner's whose agent navigates to the site's protected page and meets its sign-in wall. */
async function parkedRun({ agent, owner }: Person, at: IdentityProviderSite, profile: string): Promise<string> {
  const run = await owner.createRun({ profile_id: profile, intent: 'Read my weekly reports', origins: [at.siteOrigin], deadline_ms: 600_000 });
  const blocked = (await agent.propose(run.id, 'browser.navigate', { url: at.protectedUrl })).body;
  expect(blocked.error?.code).toBe('authentication_required');
  const parked = await agent.run(run.id);
  expect(parked.state).toBe('waiting_for_authentication');
  expect(parked.authentication?.reasons.map((reason) => reason.code)).toEqual(expect.arrayContaining(['single_sign_on', 'redirected_with_return_url']));
  // The owner is told once the window waits for them (after the host checked the saved session).
  expect(await owner.waitForNotices(run.id)).toHaveLength(1);
  return run.id;
}

/** In the live view: the keyboard to the site's "Sign in with Acme ID" button, then Enter; resolves once the window has drawn the answer. */
async function chooseProvider(page: Page): Promise<void> {
  await waitForQuietScreen(page);
  await pressKeys(page, ['Tab', 'Enter']);
}

/** In the live view, after the provider served its page `counter`: waits for it on screen, then types. */
async function onProviderPage(page: Page, at: IdentityProviderSite, counter: 'loginPages' | 'codePages' | 'consentPages', times: number): Promise<void> {
  await until(() => (at.counters()[counter] >= times ? true : undefined), `the provider's ${counter} to be served`, 30_000);
  await waitForQuietScreen(page);
}

/** The person signs in at the provider through the live view: username, password, the code when asked, Allow. */
async function signInAtProvider(page: Page, at: IdentityProviderSite): Promise<void> {
  await onProviderPage(page, at, 'loginPages', 1);
  await pressKeys(page, ['Tab']);
  await typeText(page, at.account.username);
  await pressKeys(page, ['Tab']);
  await typeText(page, at.account.password);
  await pressKeys(page, ['Enter']);
  if (at.account.code !== undefined) {
    await onProviderPage(page, at, 'codePages', 1);
    await pressKeys(page, ['Tab']);
    await typeText(page, at.account.code);
    await pressKeys(page, ['Enter']);
  }
  await onProviderPage(page, at, 'consentPages', 1);
  await pressKeys(page, ['Tab', 'Enter']);
}

/** The person opens the live view of the run's sign-in and signs in at `at`'s provider: the site's button, then the provider's pages. */
async function signInThroughLiveView(page: Page, at: IdentityProviderSite): Promise<void> {
  await openLiveView(page, 30_000);
  await chooseProvider(page);
  await signInAtProvider(page, at);
}

/** The live view ends with the host's word that the person is signed in, and the run is queued again for a fresh lease and read. */
async function resumedAfterSignIn({ agent, page }: Person, runId: string): Promise<void> {
  await page.locator('#live-view[data-state="ended"]').waitFor({ timeout: 60_000 });
  expect(await page.locator('#live-status').textContent()).toContain('you are signed in');
  await until(async () => ((await agent.run(runId)).state === 'queued' ? true : undefined), 'the run to be queued again', 60_000);
}

/** Everything the agent can read about `runId`: the run, its activity and every call's view, as JSON. */
async function agentVisible(agent: ApiClient, runId: string): Promise<string> {
  const run = await agent.run(runId);
  const activity = (await agent.raw('GET', `/v1/runs/${runId}/activity`)).body as ActivityList;
  expect(activity.activity.length).toBeGreaterThan(0);
  const calls = await Promise.all(activity.activity.filter((entry) => entry.kind === 'tool_call').map((entry) => agent.toolCall(entry.id)));
  return JSON.stringify({ run, activity, calls });
}

describe('a sign-in through an identity provider on another origin', () => {
  it('the owner follows it to the provider and back in the live view; the run resumes by itself, reads the page signed in, and the agent never sees the provider', async ({
    site: sites,
    stack,
    agent,
    owner,
    page,
  }) => {
    const site = sites.plain;
    const runId = await parkedRun({ agent, owner, page }, site, 'acme-reports');

    await signInThroughLiveView(page, site);
    await resumedAfterSignIn({ agent, owner, page }, runId);
    expect(site.counters()).toMatchObject({ logins: 1, consents: 1, tokenExchanges: 1 });

    // The run's first read after the sign-in is a fresh one, on the site, signed in.
    const reports = observationOf((await agent.propose(runId, 'browser.navigate', { url: site.protectedUrl })).body);
    expect(reports.url).toBe(site.protectedUrl);
    expect(reports.snapshot).toContain('Signed in as Ada Lovelace');
    expect(await owner.waitForNotices(runId)).toHaveLength(1);
    const visible = await agentVisible(agent, runId);
    expect(visible).not.toContain(site.providerOrigin);
    expect(visible).not.toContain('Sign in to Acme ID');
    expect(visible).not.toContain('Allow Acme Reports');

    // The owner reads where the sign-in went, on an accessible page.
    await page.goto(`${stack.edgeUrl}/console/sign-ins`);
    const providerHost = new URL(site.providerOrigin).host;
    await expect.poll(() => page.getByText(`${providerHost} → back`).count()).toBeGreaterThan(0);
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${stack.edgeUrl}/console/runs/${runId}`);
    expect(await page.getByText(`${providerHost} → back`).count()).toBeGreaterThan(0);
    await agent.report(runId, 'completed', 'Read the weekly reports after the owner signed in at Acme ID.');
  });

  it('two pages at the provider (password, then a code) and an account chooser back on the site are one sign-in', async ({
    site: sites,
    stack,
    agent,
    owner,
    page,
  }) => {
    const twoHopSite = sites.twoHop;
    const runId = await parkedRun({ agent, owner, page }, twoHopSite, 'acme-two-hop');
    await signInThroughLiveView(page, twoHopSite);
    // Back on the site, "Continue as Ada Lovelace" is still part of the ceremony.
    await until(() => (twoHopSite.counters().chooserPages >= 1 ? true : undefined), 'the account chooser', 30_000);
    await waitForQuietScreen(page);
    await pressKeys(page, ['Tab', 'Enter']);
    await resumedAfterSignIn({ agent, owner, page }, runId);
    expect(twoHopSite.counters()).toMatchObject({ codesAccepted: 1, chosen: 1, tokenExchanges: 1 });
    const [episodes] = await stack.queryD1(`SELECT state FROM sign_in_episodes WHERE profile_id = 'acme-two-hop'`);
    expect(episodes?.map((episode) => episode.state)).toEqual(['resolved']);
    await agent.report(runId, 'completed', 'signed in through two provider pages');
  });

  it('a provider on a loopback address the operator did not allow is refused, and the live view says why', async ({ site: sites, agent, owner, page }) => {
    const unallowedSite = sites.unallowed;
    const runId = await parkedRun({ agent, owner, page }, unallowedSite, 'acme-unallowed');
    await openLiveView(page, 30_000);
    await waitForQuietScreen(page);
    await pressKeys(page, ['Tab', 'Enter']);
    const notice = page.locator('#live-notice');
    await notice.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await notice.textContent()).toContain(`The sign-in went to ${unallowedSite.providerOrigin}, which is on a loopback, private or link-local address`);
    expect(unallowedSite.counters().loginPages).toBe(0);
    expect((await agent.run(runId)).state).toBe('waiting_for_authentication');
    expect((await owner.raw('POST', `/v1/runs/${runId}/cancel`)).status).toBe(200);
  });

  it('a provider that is not among the host sign-in origins is refused, and the live view says why', async ({ site: sites, agent, owner, page }) => {
    const notSignInSite = sites.notSignIn;
    const runId = await parkedRun({ agent, owner, page }, notSignInSite, 'acme-not-sign-in');
    await openLiveView(page, 30_000);
    await waitForQuietScreen(page);
    await pressKeys(page, ['Tab', 'Enter']);
    const notice = page.locator('#live-notice');
    await notice.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await notice.textContent()).toContain(
      `${notSignInSite.providerOrigin}, which is not among the sign-in origins this browser host allows (HOST_SIGN_IN_ORIGINS)`,
    );
    expect(notSignInSite.counters().loginPages).toBe(0);
    expect((await owner.raw('POST', `/v1/runs/${runId}/cancel`)).status).toBe(200);
  });
});
