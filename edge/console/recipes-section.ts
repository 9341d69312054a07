import { Hono } from 'hono';
import { listRecipes } from '../recipes/catalog.ts';
import { type ListedThing, listPage } from './pages.ts';
import type { ConsoleEnv } from './session-guard.ts';

/** The recipes section: the reviewed recipe catalog, read-only. */
export const recipesSection = new Hono<ConsoleEnv>()
  // The reviewed recipe catalog, read-only: only the operator publishes (issue 19).
  .get('/console/recipes', async (c) => {
    const things = (await listRecipes(c.var.ports)).map(
      (recipe): ListedThing => ({
        title: `${recipe.id} (version ${recipe.version})`,
        details: [
          ['Asked as', recipe.phrases.map((phrase) => `"${phrase}"`).join(', ')],
          ['Site', recipe.origin],
          ['State', recipe.in_use ? 'in use' : !recipe.enabled ? 'disabled' : 'not reviewed (names no fixture)'],
          ['Reviewed against', recipe.reviewed_fixture || 'nothing'],
          ['Steps', recipe.steps.map((step, index) => `${index + 1}. ${step.title}`).join(' ')],
          ...(recipe.fields.length > 0 ? ([['Needs from your message', recipe.fields.join(', ')]] as const) : []),
          ['Hash', recipe.hash],
        ],
      }),
    );
    return c.html(
      listPage(
        '/console/recipes',
        'Reviewed recipes',
        things,
        c.var.session.csrfToken,
        'No recipes: the catalog is empty until the operator publishes one (POST /v1/recipes/{id}).',
      ),
    );
  });
