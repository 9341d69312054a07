import { and, desc, eq, isNotNull, or, sql } from 'drizzle-orm';
import type { ActTarget, ElementTarget } from '../../shared/act-target.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import { type RunRow, toolCalls } from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { fieldRefusal } from './form-fields.ts';
import { elementIn, type ObservedElement, observationsOf, type RevisionObservation } from './observed-element.ts';

/** Most stored results searched for the elements of one act. */
const MAX_RESULTS_SEARCHED = 32;

/** Why an act cannot be bound to what its revision's observations showed, in words naming the element. */
export interface TargetRefusal {
  readonly code: 'invalid_arguments' | 'not_actionable';
  readonly message: string;
}

/** An act bound to its elements ({@link ActTarget}), or why it cannot be. */
export type TargetBinding = { readonly target: ActTarget; readonly refused?: undefined } | { readonly target?: undefined; readonly refused: TargetRefusal };

/**
 * The elements `action` touches as the run's stored observations of `revision` showed them (see
 * shared/act-target.ts `ActTarget`): for each reference, the snapshot line carrying
 * `[ref=<reference>]` in any window of that revision the run received (first windows and
 * continuations alike), its role and accessible name, and the origin of its frame (from the
 * observation's `frames` for a reference inside an iframe, else the page's); with the page's URL
 * and title where the act's own element was seen and the input the act would send. A drag's
 * `to_reference` is bound as `destination`; a fill_form's every field as `fields` (with its
 * value; the first is also the act's own element), its `submit_reference` as `submit` and its
 * `submit_key` as `key`.
 * `preloaded`, when given, is the stored results that mention the act's own reference, already
 * read with the proposal (newest first; edge/pipeline/proposal-context.ts); whatever they do not
 * show is read here.
 * @returns `refused` with code `invalid_arguments` when an element is in no observation of that
 *   revision the run received, a drag ends on the element it starts on (that is a click), a
 *   fill_form lists a field twice, or a field's role cannot take its
 *   value (a boolean into a textbox, a string into a checkbox, false into a radio button);
 *   `not_actionable` when an element is inert (the host marked it `[inert]`: behind a modal
 *   dialog or inside an inert subtree, where no person can reach it). Nothing is sent either way.
 */
export async function actTarget(ports: Ports, run: RunRow, action: BrowserAction, preloaded?: readonly unknown[]): Promise<TargetBinding> {
  const references = referencesOf(action);
  if (action.action === 'fill_form') {
    const twice = action.fields.map((field) => field.reference).find((reference, index, all) => all.indexOf(reference) !== index);
    if (twice !== undefined) return refusal('invalid_arguments', `field ${twice} is listed more than once; each field is filled once`);
  }
  // Pressed and released on the same element, a drag is a click: it is asked for as one.
  if (action.action === 'drag' && action.to_reference === action.reference) {
    return refusal('invalid_arguments', `a drag of ${action.reference} onto itself is a click; drag onto another element, or click it`);
  }
  let observations = observationsOf(preloaded ?? (await storedResults(ports, run.id, action.revision, references)), action.revision);
  let found = bind(references, observations);
  if (preloaded !== undefined && found.size < new Set(references).size) {
    const missing = references.filter((reference) => !found.has(reference));
    observations = [...observations, ...observationsOf(await storedResults(ports, run.id, action.revision, missing), action.revision)];
    found = bind(references, observations);
  }
  const unseen = [...new Set(references.filter((reference) => !found.has(reference)))];
  if (unseen.length > 0) {
    const names = unseen.length === 1 ? `reference ${unseen[0]} is` : `references ${unseen.join(', ')} are`;
    return refusal(
      'invalid_arguments',
      `${names} in no observation of revision ${action.revision} this run received; observe (or read the continuation) first`,
    );
  }
  const element = (reference: string) => found.get(reference) as ObservedElement;
  if (action.action === 'fill_form') {
    for (const field of action.fields) {
      const refused = fieldRefusal(field, element(field.reference).element);
      if (refused !== undefined) return refusal('invalid_arguments', refused);
    }
  }
  for (const reference of new Set(references)) {
    const { element: seen, inert } = element(reference);
    if (inert) {
      return refusal(
        'not_actionable',
        `${reference} (the ${seen.role} ${JSON.stringify(seen.name)}) is inert: it is behind a modal dialog or inside an inert part of the page, where no person can reach it; nothing was dispatched`,
      );
    }
  }
  const own = element(action.reference);
  const target: ActTarget = {
    ...own.element,
    page_url: own.page.url,
    page_title: own.page.title,
    ...(action.action === 'type' ? { text: action.text } : {}),
    ...(action.action === 'select' ? { option: action.value } : {}),
    ...(action.action === 'press' ? { key: action.key } : {}),
    ...(action.action === 'drag' ? { destination: element(action.to_reference).element } : {}),
    ...(action.action === 'fill_form'
      ? {
          fields: action.fields.map((field): ElementTarget => ({ ...element(field.reference).element, value: field.value })),
          ...(action.submit_reference !== undefined ? { submit: element(action.submit_reference).element } : {}),
          ...(action.submit_key !== undefined ? { key: action.submit_key } : {}),
        }
      : {}),
  };
  return { target };
}

/**
 * The further elements of a bound act (a drag's destination, a fill_form's every field and its
 * submit button), as the host must still find them before any input (shared/protocol.ts
 * `ExpectedElement`); empty for a single-element act.
 */
export function furtherElements(target: ActTarget): { reference: string; role: string; name: string; frame_origin: string }[] {
  return [...(target.fields ?? []), ...(target.submit ? [target.submit] : []), ...(target.destination ? [target.destination] : [])].map(
    ({ reference, role, name, frame_origin }) => ({ reference, role, name, frame_origin }),
  );
}

/** Every reference an act touches, its own first: a drag's destination, a fill_form's fields and submit button. */
function referencesOf(action: BrowserAction): string[] {
  switch (action.action) {
    case 'drag':
      return [action.reference, action.to_reference];
    case 'fill_form':
      return [action.reference, ...action.fields.map((field) => field.reference), ...(action.submit_reference !== undefined ? [action.submit_reference] : [])];
    default:
      return [action.reference];
  }
}

/** Each of `references` found in `observations` (the first observation that shows it wins). */
function bind(references: readonly string[], observations: readonly RevisionObservation[]): Map<string, ObservedElement> {
  const found = new Map<string, ObservedElement>();
  for (const reference of references) {
    if (found.has(reference)) continue;
    for (const observation of observations) {
      const seen = elementIn(observation, reference);
      if (seen !== undefined) {
        found.set(reference, seen);
        break;
      }
    }
  }
  return found;
}

/** The run's stored results of `revision` that mention any of `references`, newest first (at most 32). */
async function storedResults(ports: Ports, runId: string, revision: number, references: readonly string[]): Promise<unknown[]> {
  const markers = [...new Set(references)].map((reference) => sql`instr(${toolCalls.result}, ${`[ref=${reference}]`}) > 0`);
  const rows = await ports.db
    .select({ result: toolCalls.result })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, runId), isNotNull(toolCalls.result), sql`json_extract(${toolCalls.result}, '$.revision') = ${revision}`, or(...markers)))
    .orderBy(desc(toolCalls.updatedAt))
    .limit(MAX_RESULTS_SEARCHED);
  return rows.map((row) => row.result);
}

function refusal(code: TargetRefusal['code'], message: string): TargetBinding {
  return { refused: { code, message } };
}
