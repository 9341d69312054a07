import { GrantView, type RunView } from '../shared/api.ts';
import { RecipeRunView, RecipeView } from '../shared/recipes.ts';
import { type AccountSite, weeklyReportRecipe } from './account-site.ts';
import { ApiClient } from './api-client.ts';
import type { LocalStack } from './local-stack.ts';

/** What the recipe journey did. */
export interface RecipeJourneyRecord {
  readonly recipe: RecipeView;
  readonly run: RunView;
  readonly finalRun: RunView;
  readonly timeline: RecipeRunView;
  /** Reports the site filed during the run, by its own counter (exactly 1). */
  readonly reportsFiled: number;
  /** Calls of the run proposed by an agent (0: the recipe runner made them all). */
  readonly agentCalls: number;
  /** Approvals asked of the owner for the run (0: the owner's grant covers the routine writes). */
  readonly approvals: number;
}

const ENDED: readonly RunView['state'][] = ['completed', 'partial', 'uncertain', 'failed', 'cancelled', 'deadline_exceeded'];

/**
 * The demo's reviewed recipe (issue 19, ADR-0164 part 5) over HTTP, on the account site whose
 * profile the sign-in journey signed in: the operator installs the reviewed "File the weekly
 * report" recipe; the owner grants typing and clicking there and asks, in exactly the recipe's
 * words with a `title` field; the edge's recipe runner files the report one ordinary call at a
 * time, no agent involved; the journey prints each step with its evidence and the site's counter.
 * @param profile the owner's browser profile already signed in to the site.
 * @param log sees each line as it happens.
 * @throws Error when the run does not end within two minutes.
 */
export async function runRecipeJourney(stack: LocalStack, site: AccountSite, profile: string, log: (line: string) => void): Promise<RecipeJourneyRecord> {
  const operator = new ApiClient(stack.edgeUrl, stack.tokens.operator);
  const owner = new ApiClient(stack.edgeUrl, stack.tokens.owner);
  const recipe = (await operator.request('POST', '/v1/recipes/file-weekly-report', RecipeView, weeklyReportRecipe(site.origin))).body;
  log(
    `operator installed the reviewed recipe ${recipe.id} version ${recipe.version} (hash ${recipe.hash.slice(0, 12)}…): "${recipe.phrases[0]}" on ${recipe.origin}, ${recipe.steps.length} steps, needs the field ${recipe.fields.join(', ')}`,
  );
  await owner.request('POST', '/v1/grants', GrantView, {
    tool: 'browser.act',
    actions: ['click', 'type'],
    origin: site.origin,
    max_uses: 2,
    ttl_ms: 3_600_000,
  });
  const before = site.counters().reports_filed;
  const run = await owner.createRun({
    profile_id: profile,
    intent: 'File the weekly report.',
    origins: [site.origin],
    fields: { title: 'Week 49' },
    deadline_ms: 600_000,
  });
  log(`owner asked "File the weekly report." with title "Week 49": run ${run.id} is bound to ${run.recipe?.id ?? 'no recipe'} v${run.recipe?.version ?? '-'}`);
  if (run.recipe === null) throw new Error('the owner message did not select the recipe');
  const until = Date.now() + 120_000;
  let finalRun = run;
  while (!ENDED.includes(finalRun.state)) {
    if (Date.now() > until) throw new Error(`run ${run.id} is still ${finalRun.state} after two minutes`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    finalRun = await owner.run(run.id);
  }
  const timeline = (await owner.request('GET', `/v1/runs/${run.id}/recipe`, RecipeRunView)).body;
  const [agentCalls, approvals] = await stack.queryD1(
    `SELECT count(*) AS n FROM tool_calls c JOIN principals p ON p.id = c.principal_id WHERE c.run_id = '${run.id}' AND p.kind = 'agent'`,
    `SELECT count(*) AS n FROM approvals WHERE run_id = '${run.id}'`,
  );
  return {
    recipe,
    run,
    finalRun,
    timeline,
    reportsFiled: site.counters().reports_filed - before,
    agentCalls: Number(agentCalls?.[0]?.n ?? -1),
    approvals: Number(approvals?.[0]?.n ?? -1),
  };
}
