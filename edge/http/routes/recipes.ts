import { createRoute } from '@hono/zod-openapi';
import { IdParam } from '../../../shared/api.ts';
import { RecipeBody, RecipeList, RecipeParam, RecipeRunView, RecipeView } from '../../../shared/recipes.ts';
import { listRecipes, publishRecipe, readRecipe } from '../../recipes/catalog.ts';
import { recipeRunView } from '../../recipes/progress.ts';
import { loadRun } from '../../runs/lifecycle.ts';
import { requirePrincipal } from '../require-principal.ts';
import { AUTH_ERRORS, errorResponses, jsonBody, jsonResponse, newRouter } from '../router.ts';

const security = [{ bearer: [] }];

const list = createRoute({
  method: 'get',
  path: '/v1/recipes',
  summary: 'The reviewed recipe catalog: the newest version of every recipe (empty until an operator publishes one)',
  security,
  middleware: [requirePrincipal('operator', 'owner')] as const,
  responses: { 200: jsonResponse(RecipeList, 'the catalog'), ...errorResponses(...AUTH_ERRORS) },
});

const read = createRoute({
  method: 'get',
  path: '/v1/recipes/{id}',
  summary: 'The version of a recipe in force, with its hash',
  security,
  middleware: [requirePrincipal('operator', 'owner')] as const,
  request: { params: RecipeParam },
  responses: { 200: jsonResponse(RecipeView, 'the recipe'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

const publish = createRoute({
  method: 'post',
  path: '/v1/recipes/{id}',
  summary:
    'Publish the next version of a recipe: origin, exact owner-intent phrases, at most 16 steps (expected state, target by role and name, action, postcondition); used only when enabled and naming its reviewed fixture',
  security,
  middleware: [requirePrincipal('operator')] as const,
  request: { params: RecipeParam, body: jsonBody(RecipeBody) },
  responses: { 201: jsonResponse(RecipeView, 'the new version'), ...errorResponses(...AUTH_ERRORS, 'already_decided') },
});

const timeline = createRoute({
  method: 'get',
  path: '/v1/runs/{id}/recipe',
  summary: "A recipe-bound run's recipe, persisted progress and timeline: every step with its evidence and calls",
  security,
  middleware: [requirePrincipal('owner', 'agent')] as const,
  request: { params: IdParam },
  responses: { 200: jsonResponse(RecipeRunView, 'the recipe run'), ...errorResponses(...AUTH_ERRORS, 'not_found') },
});

/** Recipe endpoints (issue 19): operators publish, owners and operators read; a bound run's timeline for its owner and agents. */
export const recipeRoutes = newRouter()
  .openapi(list, async (c) => c.json({ recipes: await listRecipes(c.var.ports) }, 200))
  .openapi(read, async (c) => c.json(await readRecipe(c.var.ports, c.req.valid('param').id), 200))
  .openapi(publish, async (c) => c.json(await publishRecipe(c.var.ports, c.var.principal, c.req.valid('param').id, c.req.valid('json')), 201))
  .openapi(timeline, async (c) => {
    const run = await loadRun(c.var.ports, c.var.principal, c.req.valid('param').id);
    return c.json(await recipeRunView(c.var.ports, run), 200);
  });
