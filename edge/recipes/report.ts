import type { RecipeBody } from '../../shared/recipes.ts';
import type { RunRow } from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { boundRecipe } from './catalog.ts';
import { eventsOf } from './progress.ts';

/**
 * The tool-free final report of a bound run (ADR-0164 part 5: "completion or uncertainty forces a
 * tool-free final report"), written from its recorded evidence only: each step done and how it
 * was proven, the step it stopped at with the acts that are uncertain, the steps not begun.
 * @param nextStep the first step not done (0-based).
 * @param known the recipe's body when the caller has it (else read from the catalog).
 * @returns the report's lines joined by `\n`; the caller appends why the run stopped.
 */
export async function reportOf(ports: Ports, run: RunRow, nextStep: number, known?: RecipeBody): Promise<string> {
  const recipe = known ?? (await boundRecipe(ports, run.recipeId!, run.recipeVersion!)).body;
  const events = await eventsOf(ports, run.id);
  const lines = [`Reviewed recipe ${run.recipeId} v${run.recipeVersion}: ${Math.min(nextStep, recipe.steps.length)} of ${recipe.steps.length} steps done.`];
  recipe.steps.forEach((step, index) => {
    const proof = events.filter((event) => event.step === index && (event.kind === 'step_done' || event.kind === 'already_done')).at(-1);
    if (index < nextStep)
      lines.push(`${index + 1}. ${step.title}: done (${proof?.kind === 'already_done' ? 'seen done on a fresh read' : 'postcondition satisfied'}).`);
    else if (index === nextStep) {
      const uncertain = events.filter((event) => event.step === index && event.kind === 'call' && event.evidence.state === 'uncertain');
      lines.push(
        `${index + 1}. ${step.title}: not done${uncertain.length > 0 ? `; its act ${uncertain.map((event) => event.toolCallId).join(', ')} is uncertain and was not sent again` : ''}.`,
      );
    } else lines.push(`${index + 1}. ${step.title}: not begun.`);
  });
  return lines.join('\n');
}
