import type { Predicate } from '../../shared/predicate.ts';
import type { RecipeStep } from '../../shared/recipes.ts';

/**
 * The recipe runner's words for the owner: a predicate or a step's action as the timeline and the
 * final report write them (issue 19). Pure; nothing here reads or writes.
 */

/** A predicate in words, e.g. `the button "Save"` or `a row ["Milk"] in the table "Items"`. */
export function describePredicate(predicate: Predicate): string {
  switch (predicate.kind) {
    case 'control':
      return `the ${predicate.role} "${predicate.name}"`;
    case 'text':
      return `the text "${predicate.text}"`;
    case 'region':
      return `the ${predicate.role} region "${predicate.name}"`;
    case 'location':
      return `the page ${predicate.url ?? predicate.path}`;
    case 'row':
      return `a row ${JSON.stringify(predicate.cells)} in the ${predicate.collection.role}${predicate.collection.name ? ` "${predicate.collection.name}"` : ''}`;
  }
}

/** A step's action on its target in words, e.g. `type into the textbox "Title" and submit`; a scroll's delta in px. */
export function describeAction(step: RecipeStep): string {
  const target = `the ${step.target.role} "${step.target.name}"`;
  switch (step.action.kind) {
    case 'type':
      return `type into ${target}${step.action.submit ? ' and submit' : ''}`;
    case 'select':
      return `select in ${target}`;
    case 'press':
      return `press ${step.action.key} on ${target}`;
    case 'scroll':
      return `scroll ${target} by ${step.action.delta} px`;
    default:
      return `${step.action.kind} ${target}`;
  }
}
