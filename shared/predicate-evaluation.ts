import { type AriaNode, isInert, parseAriaSnapshot, textOf, walkAria, walkReachable } from './aria-snapshot.ts';
import type { Observation } from './observation.ts';
import type { Condition, ConditionStatus, Predicate } from './predicate.ts';

/**
 * What one observation says about one predicate: how many visible candidates share the
 * predicate's identity (role and name, or row values) and whether exactly one is in the asked
 * state. Only the observation's own window is read: nothing outside it is evidence.
 */
export interface PredicateReading {
  /** Visible candidates with the predicate's identity (0 means not seen at all). */
  readonly candidates: number;
  /** True when exactly one candidate exists and it is in the requested state. */
  readonly matched: boolean;
}

/**
 * Reads one predicate against one observation (DESIGN.md section 7):
 * - control: nodes of the exact role and exact name; each state asked (`disabled`, `checked`,
 *   `selected`, `expanded`, `pressed`, `value`) must be one the line exposes and must hold (see
 *   {@link controlState});
 * - text: the exact substring in some node's rendered text (any number of places is one match;
 *   text behind a modal dialog is still text a person sees);
 * - region: landmark or region nodes of the exact role and name;
 * - location: the document's exact URL, or its exact path (plus query and hash when given);
 * - row: rows of the named collection whose named cells equal the given values.
 *
 * Controls, regions and rows count only where a person can reach them: a node the host marked
 * `[inert]` (behind a modal dialog, inside an `inert` subtree) and everything under it is never
 * a candidate.
 */
export function readPredicate(predicate: Predicate, observation: Pick<Observation, 'url' | 'snapshot'>): PredicateReading {
  switch (predicate.kind) {
    case 'location':
      return exactlyOne(locationMatches(predicate, observation.url) ? 1 : 0);
    case 'text': {
      const needle = collapse(predicate.text);
      const found = [...walkAria(snapshotNodes(observation.snapshot))].some((node) => textOf(node).includes(needle));
      return { candidates: found ? 1 : 0, matched: found };
    }
    case 'control': {
      const candidates = [...walkReachable(snapshotNodes(observation.snapshot))].filter((node) => node.role === predicate.role && node.name === predicate.name);
      const only = candidates.length === 1 ? candidates[0]! : undefined;
      return { candidates: candidates.length, matched: only !== undefined && inAskedState(only, predicate) };
    }
    case 'region':
      return exactlyOne(
        [...walkReachable(snapshotNodes(observation.snapshot))].filter((node) => node.role === predicate.role && node.name === predicate.name).length,
      );
    case 'row':
      return exactlyOne(matchingRows(predicate, snapshotNodes(observation.snapshot)));
  }
}

/** The last snapshot text parsed and its nodes: a condition reads one window several times. */
let lastParsed: { text: string; nodes: AriaNode[] } | undefined;

function snapshotNodes(text: string): AriaNode[] {
  if (lastParsed?.text !== text) lastParsed = { text, nodes: parseAriaSnapshot(text) };
  return lastParsed.nodes;
}

function exactlyOne(count: number): PredicateReading {
  return { candidates: count, matched: count === 1 };
}

/**
 * The status of a condition on one observation: `ambiguous` when the success predicate has
 * several candidates or success and failure are both seen; `failure_observed` when only the
 * failure predicate is seen; `satisfied` for exactly one success match in the requested state;
 * otherwise `not_observed`.
 */
export function conditionStatus(condition: Condition, observation: Pick<Observation, 'url' | 'snapshot'>): ConditionStatus {
  const success = readPredicate(condition.success, observation);
  const failure = condition.failure ? readPredicate(condition.failure, observation) : { candidates: 0, matched: false };
  const failureSeen = failure.candidates > 0;
  if (success.candidates > 1 && condition.success.kind !== 'text') return 'ambiguous';
  if (success.matched && failureSeen) return 'ambiguous';
  if (failureSeen) return 'failure_observed';
  return success.matched ? 'satisfied' : 'not_observed';
}

/** True when every state the predicate asks is exposed by the node and equals the asked one. */
function inAskedState(node: AriaNode, predicate: Extract<Predicate, { kind: 'control' }>): boolean {
  const states = ['selected', 'expanded', 'pressed'] as const;
  return (
    (predicate.disabled === undefined || isDisabled(node) === predicate.disabled) &&
    (predicate.checked === undefined || isChecked(node) === predicate.checked) &&
    states.every((state) => predicate[state] === undefined || controlState(node, state) === predicate[state]) &&
    (predicate.value === undefined || controlValue(node) === predicate.value)
  );
}

function isDisabled(node: AriaNode): boolean {
  return node.attributes.disabled === 'true';
}

/** `checked` as 1.2.0 defined it: a pressed toggle or a selected tab counts as checked too. */
function isChecked(node: AriaNode): boolean {
  return node.attributes.checked === 'true' || node.attributes.pressed === 'true' || node.attributes.selected === 'true';
}

/**
 * Roles whose selection Chromium and Playwright always expose: a tab or an option without
 * `[selected]` is one that is not selected. Any other role without the mark may simply not be
 * selectable, so its absence says nothing.
 */
const ALWAYS_SELECTABLE_ROLES = new Set(['tab', 'option']);

/**
 * One exact state of a control as its snapshot line shows it, or undefined when the line does not
 * expose it. Playwright's AI-mode snapshot writes `[selected]`, `[expanded]` and `[pressed]` only
 * when the state is true (`[pressed=mixed]` for a half-pressed toggle) and writes nothing both for
 * "false" and for "no such state": a button without `aria-pressed` and one with
 * `aria-pressed="false"` print the same line, as do a collapsed accordion header and a plain
 * button. So false is read only where it is certain: an explicit `[state=false]` mark, or
 * `selected` on a tab or option (always selectable). A mixed toggle is neither pressed nor not.
 */
export function controlState(node: AriaNode, state: 'selected' | 'expanded' | 'pressed'): boolean | undefined {
  const mark = node.attributes[state];
  if (mark === 'true') return true;
  if (mark === 'false') return false;
  if (mark !== undefined) return undefined;
  return state === 'selected' && ALWAYS_SELECTABLE_ROLES.has(node.role) ? false : undefined;
}

/** Roles whose current value Playwright prints: after the colon (`textbox "Day": 2026-12-15`) or as the selected option. */
const VALUE_ROLES = new Set(['textbox', 'searchbox', 'combobox', 'spinbutton', 'slider']);

/**
 * The exact current value of a text field, select or combobox as the snapshot shows it, or
 * undefined when it does not: the inline text after the line's colon (an input's or textarea's
 * value, `textbox "Day": 2026-12-15`, `combobox "Search": Ger`); for a `<select>` (a combobox
 * listing its options) the one option marked `[selected]`; for a content-editable field its
 * rendered text; the empty string for a text field (textbox, searchbox, spinbutton) with no value
 * and no content, which Playwright prints bare. A combobox showing neither a value nor options is
 * not read as empty: a window may have cut its options off.
 */
export function controlValue(node: AriaNode): string | undefined {
  if (!VALUE_ROLES.has(node.role)) return undefined;
  if (node.value !== undefined) return node.value;
  const options = node.children.filter((child) => child.role === 'option');
  if (options.length > 0) {
    const chosen = options.filter((option) => option.attributes.selected === 'true');
    return chosen.length === 1 ? (chosen[0]!.name ?? textOf(chosen[0]!)) : undefined;
  }
  if (node.children.length > 0) return collapse(node.children.map(textOf).join(' '));
  return node.role === 'combobox' ? undefined : '';
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function locationMatches(predicate: Extract<Predicate, { kind: 'location' }>, url: string): boolean {
  if (predicate.url !== undefined) return predicate.url === url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  const path = predicate.path ?? '';
  const hasQuery = path.includes('?');
  const hasHash = path.includes('#');
  const actual = parsed.pathname + (hasQuery || hasHash ? parsed.search : '') + (hasHash ? parsed.hash : '');
  return actual === path;
}

/** Rows of the collection the predicate names whose named cells hold exactly the given values. */
function matchingRows(predicate: Extract<Predicate, { kind: 'row' }>, forest: AriaNode[]): number {
  const collections = [...walkReachable(forest)].filter(
    (node) => node.role === predicate.collection.role && (predicate.collection.name === undefined || node.name === predicate.collection.name),
  );
  let count = 0;
  for (const collection of collections) {
    if (collection.role === 'list' || collection.role === 'listbox') {
      const keys = Object.keys(predicate.cells);
      if (keys.length !== 1 || keys[0] !== 'text') continue;
      const wanted = collapse(predicate.cells.text ?? '');
      count += collection.children.filter(
        (item) => !isInert(item) && (item.role === 'listitem' || item.role === 'option') && collapse(textOf(item)) === wanted,
      ).length;
      continue;
    }
    const rows = [...walkReachable(collection.children)].filter((node) => node.role === 'row');
    const header = rows.find((row) => row.children.some((cell) => cell.role === 'columnheader'));
    const columns = header ? header.children.filter((cell) => cell.role === 'columnheader').map((cell) => collapse(cell.name ?? textOf(cell))) : [];
    for (const row of rows) {
      if (row === header) continue;
      const cells = row.children.filter((cell) => cell.role === 'cell' || cell.role === 'gridcell' || cell.role === 'rowheader');
      const byColumn = new Map(columns.map((column, index) => [column, cells[index] ? collapse(cells[index].name ?? textOf(cells[index])) : undefined]));
      if (Object.entries(predicate.cells).every(([column, value]) => byColumn.get(collapse(column)) === collapse(value))) count++;
    }
  }
  return count;
}
