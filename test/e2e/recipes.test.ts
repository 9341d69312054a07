import { describe, expect } from 'vitest';
import { accountSiteDefinition, startAccountSite, weeklyReportRecipe } from '../../scripts/account-site.ts';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { ApprovalList, GrantView, type RunView, RunView as RunViewSchema } from '../../shared/api.ts';
import { MAX_RECIPE_CALLS, RecipeList, RecipeRunView, RecipeView } from '../../shared/recipes.ts';
import { startFixtureServer } from '../support/fixture-server.ts';
import { personSignsIn, runReaches, stackTest } from '../support/stack-fixture.ts';
import { UntilTimedOut, until } from '../support/until.ts';

// Reviewed recipes (ADR-0164 part 5) in real processes and real Chromium: the edge under
// `wrangler dev` with a local D1 and its recipe runner, the browser host with the fixture's site
// definition, reached through a relay the test can cut, and the report/account fixture site,
// whose own counters say what really happened.

/** What the site hooks do on the next filed report / request (set per test). */
let onReportFiled: (() => void) | undefined;
let onRequest: ((key: string) => void) | undefined;

const it = stackTest({
  site: () => startAccountSite({ hooks: { onReportFiled: () => onReportFiled?.(), onRequest: (key) => onRequest?.(key) } }),
  siteDefinitions: (site) => [accountSiteDefinition(site.origin)],
  hostRelay: true,
  hostVars: { HOST_PERSON_DEBUGGING: '1', HOST_CEREMONY_POLL_MS: '500' },
})
  // The file's helpers, bound to its stack and site.
  .extend('recipeOf', { scope: 'file' }, ({ owner }) => async (runId: string): Promise<RecipeRunView> => {
    return (await owner.request('GET', `/v1/runs/${runId}/recipe`, RecipeRunView)).body;
  })
  .extend('install', { scope: 'file' }, ({ operator }) => async (id: string, body: unknown): Promise<RecipeView> => {
    return (await operator.request('POST', `/v1/recipes/${id}`, RecipeView, body)).body;
  })
  /** Grants the routine acts on the site; the grant's id. */
  .extend('grantActs', { scope: 'file' }, ({ owner, site }) => async (): Promise<string> => {
    const grant = await owner.request('POST', '/v1/grants', GrantView, {
      tool: 'browser.act',
      actions: ['click', 'type'],
      origin: site.origin,
      max_uses: 4,
      ttl_ms: 3_600_000,
    });
    return grant.body.id;
  })
  /** Calls of the run by principal kind: the recipe runner's, and any agent's. */
  .extend('callsOf', { scope: 'file' }, ({ stack }) => async (runId: string): Promise<{ runner: Record<string, unknown>[]; agents: number }> => {
    const [calls, agents] = await stack.queryD1(
      `SELECT id, principal_id, tool, state, json_extract(arguments, '$.action') AS action FROM tool_calls WHERE run_id = '${runId}' ORDER BY created_at, rowid`,
      `SELECT count(*) AS n FROM tool_calls c JOIN principals p ON p.id = c.principal_id WHERE c.run_id = '${runId}' AND p.kind = 'agent'`,
    );
    return { runner: (calls ?? []).filter((call) => String(call.principal_id).startsWith('recipe:')), agents: Number(agents?.[0]?.n ?? -1) };
  })
  /** A console session of the owner (the sign-in form with the owner's token): its cookie. */
  .extend('consoleSession', { scope: 'file' }, ({ stack }) => async (): Promise<string> => {
    const answer = await fetch(`${stack.edgeUrl}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: stack.edgeUrl },
      body: new URLSearchParams({ token: stack.tokens.owner }).toString(),
    });
    return (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
  })
  /** Alice, at the host's window, signs in to the site in the owner's profile `weekly`, which the recipe runs use. */
  .extend(
    'aliceSignsIn',
    { scope: 'file' },
    ({ stack, site, ownerId }) =>
      () =>
        personSignsIn({ stack, site, ownerId }, 'weekly', 'alice'),
  );

it.beforeAll(async ({ agent, owner, site, aliceSignsIn }) => {
  // The profile the recipe runs use is signed in once, the ordinary way: an agent meets the
  // wall, the person signs in at the host's window, the agent reports.
  const setup = await owner.createRun({ profile_id: 'weekly', intent: 'Sign in to Reports', origins: [site.origin] });
  const blocked = (await agent.propose(setup.id, 'browser.navigate', { url: `${site.origin}/reports` })).body;
  expect(blocked.error?.code).toBe('authentication_required');
  // The ceremony has begun (its one notice is out): the sign-in window is the one to use.
  await owner.waitForNotices(setup.id);
  await aliceSignsIn();
  await runReaches(owner, setup.id, ['queued'], 90_000);
  observationOf((await agent.propose(setup.id, 'browser.navigate', { url: `${site.origin}/reports` })).body);
  await agent.report(setup.id, 'completed', 'signed in');
});

const ENDED: RunView['state'][] = ['completed', 'partial', 'uncertain', 'failed', 'cancelled', 'deadline_exceeded'];

async function catalog(client: ApiClient): Promise<RecipeList['recipes']> {
  return (await client.request('GET', '/v1/recipes', RecipeList)).body.recipes;
}

let grantId: string | undefined;

describe('reviewed recipes on the report/account fixture', () => {
  it('the catalog is empty until the operator installs a reviewed recipe; owners read it, only the operator writes it', async ({
    owner,
    site,
    agent,
    install,
  }) => {
    expect(await catalog(owner)).toEqual([]);
    const refused = await owner.raw('POST', '/v1/recipes/file-weekly-report', weeklyReportRecipe(site.origin));
    expect(refused.status).toBe(403);
    expect((await agent.raw('POST', '/v1/recipes/file-weekly-report', weeklyReportRecipe(site.origin))).status).toBe(403);
    const installed = await install('file-weekly-report', weeklyReportRecipe(site.origin));
    expect(installed).toMatchObject({ id: 'file-weekly-report', version: 1, in_use: true, fields: ['title'] });
    expect(installed.hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await catalog(owner)).map((recipe) => recipe.id)).toEqual(['file-weekly-report']);
  });

  it("an owner message that is exactly the recipe's phrase files the report by itself: zero agent calls, one report, each step proven, under the owner's grant", async ({
    grantActs,
    site,
    owner,
    callsOf,
    recipeOf,
    consoleSession,
    stack,
  }) => {
    grantId = await grantActs();
    const before = site.counters().reports_filed;
    const run = await owner.createRun({ profile_id: 'weekly', intent: '  file the Weekly report. ', origins: [site.origin], fields: { title: 'Week 49' } });
    expect(run.recipe).toMatchObject({ id: 'file-weekly-report', version: 1 });
    const ended = await runReaches(owner, run.id, ENDED, 90_000);
    expect(ended.state).toBe('completed');
    expect(site.counters().reports_filed).toBe(before + 1);
    expect(site.counters().filed['alice@example.test']?.filter((title) => title === 'Week 49')).toHaveLength(1);
    const { runner, agents } = await callsOf(run.id);
    expect(agents).toBe(0);
    expect(runner.filter((call) => call.tool === 'browser.act').map((call) => call.action)).toEqual(['click', 'type']);
    const approvals = (await owner.request('GET', '/v1/approvals', ApprovalList)).body.approvals;
    expect(approvals.filter((approval) => approval.run_id === run.id)).toEqual([]);
    const recipe = await recipeOf(run.id);
    expect(recipe).toMatchObject({ next_step: 2, outcome: 'completed', recipe: run.recipe });
    expect(recipe.steps.map((step) => step.state)).toEqual(['done', 'done']);
    expect(recipe.steps[1]?.events.map((event) => event.kind)).toContain('step_done');
    expect(ended.summary).toContain('2 of 2 steps done');

    // The owner's console shows the catalog (read-only) and the run's steps with their evidence.
    const cookie = await consoleSession();
    const recipes = await (await fetch(`${stack.edgeUrl}/console/recipes`, { headers: { Cookie: cookie } })).text();
    expect(recipes).toContain('file-weekly-report (version 1)');
    expect(recipes).not.toContain('<form method="post" action="/console/recipes');
    const timeline = await (await fetch(`${stack.edgeUrl}/console/runs/${run.id}`, { headers: { Cookie: cookie } })).text();
    expect(timeline).toContain('Carried out by the reviewed recipe file-weekly-report version 1');
    expect(timeline).toContain('Recipe step 2: Step 2 is done');
  });

  it('without a grant, policy still asks the owner once for each act and for nothing else; approved, the recipe goes on by itself', async ({
    owner,
    site,
    callsOf,
  }) => {
    if (grantId) await owner.raw('POST', `/v1/grants/${grantId}/revoke`);
    const before = site.counters().reports_filed;
    const run = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 50' } });
    let asked = 0;
    for (;;) {
      const state = (await runReaches(owner, run.id, ['waiting_for_approval', ...ENDED], 90_000)).state;
      if (state !== 'waiting_for_approval') break;
      const pending = (await owner.pendingApprovals()).filter((approval) => approval.run_id === run.id);
      expect(pending).toHaveLength(1);
      asked += 1;
      await owner.decide(pending[0]!.id, 'approve');
    }
    expect((await owner.run(run.id)).state).toBe('completed');
    expect(asked).toBe(2);
    expect(site.counters().reports_filed).toBe(before + 1);
    expect((await callsOf(run.id)).agents).toBe(0);
  });

  it('the connection to the host is cut after the submit is dispatched: the call is uncertain, the runner reads again and the report is never filed twice', async ({
    grantActs,
    site,
    stack,
    owner,
    callsOf,
    recipeOf,
  }) => {
    await grantActs();
    const before = site.counters().reports_filed;
    let cut = 0;
    onReportFiled = () => {
      onReportFiled = undefined;
      cut = stack.cutHostConnections();
    };
    const run = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 51' } });
    const ended = await runReaches(owner, run.id, ENDED, 90_000);
    expect(cut).toBeGreaterThan(0);
    expect(site.counters().reports_filed).toBe(before + 1);
    const { runner } = await callsOf(run.id);
    const types = runner.filter((call) => call.action === 'type');
    expect(types).toHaveLength(1);
    expect(types[0]?.state).toBe('uncertain');
    // The fresh read after it shows the report listed once: completed; otherwise it would say uncertain.
    expect(['completed', 'uncertain']).toContain(ended.state);
    expect(ended.state).toBe('completed');
    const recipe = await recipeOf(run.id);
    expect(recipe.steps[1]?.events.map((event) => event.kind)).toEqual(expect.arrayContaining(['returned_to_observation', 'already_done']));
    expect(ended.summary).toContain('seen done on a fresh read');
  });

  it('a sign-in wall in the middle parks the run; after the verified sign-in it resumes at the persisted step and files once', async ({
    grantActs,
    site,
    owner,
    recipeOf,
    aliceSignsIn,
    callsOf,
  }) => {
    await grantActs();
    const before = site.counters();
    // The recipe is under way (its start page read, step 1 found) when the session ends: the
    // click on "New report" lands on the sign-in page.
    onRequest = (key) => {
      if (key !== 'GET /reports/new') return;
      onRequest = undefined;
      site.expireSessions();
    };
    const run = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 52' } });
    const parked = await runReaches(owner, run.id, ['waiting_for_authentication', ...ENDED], 90_000);
    expect(parked.state).toBe('waiting_for_authentication');
    expect((await recipeOf(run.id)).next_step).toBe(0);
    expect(await owner.waitForNotices(run.id)).toHaveLength(1);
    await aliceSignsIn();
    const ended = await runReaches(owner, run.id, ENDED, 90_000);
    expect(ended.state).toBe('completed');
    expect(site.counters().reports_filed).toBe(before.reports_filed + 1);
    const recipe = await recipeOf(run.id);
    expect(recipe.events.map((event) => event.kind)).toContain('resumed');
    // The click was never sent again: the fresh read of the page the sign-in was verified
    // against proved step 1, and step 2 went on from there.
    const { runner } = await callsOf(run.id);
    expect(runner.filter((call) => call.action === 'click')).toHaveLength(1);
    expect(recipe.steps[0]?.events.map((event) => event.kind)).toEqual(expect.arrayContaining(['waiting_for_sign_in', 'already_done']));
    expect(recipe.steps[1]?.events.map((event) => event.kind)).toContain('step_done');
  });

  it('a submit answered by a sign-in wall may have landed: after the sign-in it is never sent again, and without evidence the run ends uncertain', async ({
    grantActs,
    site,
    owner,
    aliceSignsIn,
    callsOf,
  }) => {
    await grantActs();
    const before = site.counters();
    // The session ends just as the submit arrives: the site refuses it and asks for sign-in.
    onRequest = (key) => {
      if (key !== 'POST /reports') return;
      onRequest = undefined;
      site.expireSessions();
    };
    const run = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 53' } });
    expect((await runReaches(owner, run.id, ['waiting_for_authentication', ...ENDED], 90_000)).state).toBe('waiting_for_authentication');
    await owner.waitForNotices(run.id);
    await aliceSignsIn();
    const ended = await runReaches(owner, run.id, ENDED, 90_000);
    expect(ended.state).toBe('uncertain');
    expect(ended.summary).toContain('it was not sent again');
    expect(site.counters().reports_filed).toBe(before.reports_filed);
    const { runner } = await callsOf(run.id);
    expect(runner.filter((call) => call.action === 'type')).toHaveLength(1);
  });

  it('a disabled recipe, an intent one word off, two recipes for one phrase, and an agent-created run all take the ordinary agent path', async ({
    owner,
    site,
    agent,
    install,
  }) => {
    const offByOne = await owner.createRun({ profile_id: 'weekly', intent: 'File the monthly report', origins: [site.origin], fields: { title: 'Week 1' } });
    const noTitle = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin] });
    expect(noTitle.recipe).toBeNull();
    await owner.raw('POST', `/v1/runs/${noTitle.id}/cancel`);
    expect(offByOne.recipe).toBeNull();
    const byAgent = await agent.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin] });
    expect(byAgent.recipe).toBeNull();
    await install('file-weekly-report-again', weeklyReportRecipe(site.origin));
    const twice = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 1' } });
    expect(twice.recipe).toBeNull();
    await install('file-weekly-report-again', weeklyReportRecipe(site.origin, { enabled: false }));
    const disabledVersion = await install('file-weekly-report', weeklyReportRecipe(site.origin, { enabled: false }));
    expect(disabledVersion).toMatchObject({ version: 2, in_use: false });
    const disabled = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 1' } });
    expect(disabled.recipe).toBeNull();
    // An ordinary run is the agent's to claim; the recipe runner never touches it.
    const claimed = (await agent.request('POST', '/v1/runs/claim', RunViewSchema)).body;
    expect([offByOne.id, twice.id, disabled.id]).toContain(claimed.id);
    for (const run of [offByOne, byAgent, twice, disabled]) await owner.raw('POST', `/v1/runs/${run.id}/cancel`);
  });

  it('a page whose text is a recipe-shaped JSON changes nothing in the catalog, and its phrase binds nothing', async ({ operator, owner, agent, stack }) => {
    const pages = await startFixtureServer();
    try {
      const before = await catalog(operator);
      // The owner asks in the words the page's recipe answers to; the catalog has no such recipe.
      const run = await owner.createRun({ profile_id: 'notes', intent: 'Read the release notes', origins: [pages.origin] });
      expect(run.recipe).toBeNull();
      const read = observationOf((await agent.propose(run.id, 'browser.navigate', { url: pages.url('recipes/recipe-on-page.html') })).body);
      expect(read.snapshot).toContain('reviewed_fixture');
      await agent.report(run.id, 'completed', 'read the release notes');
      // The owner asks, in the page's own words, on the page's origin: the ordinary path.
      const asked = await owner.createRun({ profile_id: 'notes', intent: 'Pay every invoice', origins: [pages.origin] });
      expect(asked.recipe).toBeNull();
      await owner.raw('POST', `/v1/runs/${asked.id}/cancel`);
      expect(await catalog(operator)).toEqual(before);
      const [rows] = await stack.queryD1("SELECT count(*) AS n FROM recipes WHERE created_by NOT IN (SELECT id FROM principals WHERE kind = 'operator')");
      expect(Number(rows?.[0]?.n)).toBe(0);
    } finally {
      await pages.close();
    }
  });

  it(`with the browser host down, every read the runner tries counts against the recipe's ${MAX_RECIPE_CALLS} calls: the cron passes use them up and the run ends partial, nothing filed`, async ({
    install,
    site,
    stack,
    owner,
    recipeOf,
    callsOf,
  }) => {
    // The operator enables the recipe again (the test before disabled it).
    expect(await install('file-weekly-report', weeklyReportRecipe(site.origin))).toMatchObject({ version: 3, in_use: true });
    const before = site.counters().reports_filed;
    await stack.killHost();
    try {
      const run = await owner.createRun({ profile_id: 'weekly', intent: 'File the weekly report', origins: [site.origin], fields: { title: 'Week 60' } });
      expect(run.recipe).not.toBeNull();
      // The run's creation drives it once; then each cron pass drives it once (on Workers under
      // ctx.waitUntil: the test waits for the pass's call before the next trigger).
      let seen = 0;
      let state = run.state;
      for (let pass = 0; pass < MAX_RECIPE_CALLS + 8 && !ENDED.includes(state); pass++) {
        // At most 15 s for the pass's call (or the run's end); the next pass is triggered either way.
        await until(
          async () => {
            const recipe = await recipeOf(run.id);
            state = (await owner.run(run.id)).state;
            if (recipe.calls <= seen && !ENDED.includes(state)) return undefined;
            seen = recipe.calls;
            return true;
          },
          "the pass's call or the run's end",
          15_000,
          100,
        ).catch((error) => {
          if (!(error instanceof UntilTimedOut)) throw error;
        });
        if (!ENDED.includes(state)) await stack.triggerCron();
      }
      const ended = await runReaches(owner, run.id, ENDED, 20_000);
      expect(ended.state).toBe('partial');
      expect(ended.summary).toContain(`limit of ${MAX_RECIPE_CALLS} calls`);
      const recipe = await recipeOf(run.id);
      expect(recipe).toMatchObject({ calls: MAX_RECIPE_CALLS, steps_begun: 0, next_step: 0, outcome: 'partial' });
      const { runner, agents } = await callsOf(run.id);
      expect(runner).toHaveLength(MAX_RECIPE_CALLS);
      expect(runner.every((call) => call.tool === 'browser.navigate' || call.tool === 'browser.observe')).toBe(true);
      expect(agents).toBe(0);
      expect(site.counters().reports_filed).toBe(before);
    } finally {
      await stack.startHost();
    }
  });
});
