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
 * - control: nodes of the exact role and exact name; state `disabled` / `checked` when asked;
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
      const inState =
        only !== undefined &&
        (predicate.disabled === undefined || isDisabled(only) === predicate.disabled) &&
        (predicate.checked === undefined || isChecked(only) === predicate.checked);
      return { candidates: candidates.length, matched: inState };
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

function isDisabled(node: AriaNode): boolean {
  return node.attributes.disabled === 'true';
}

function isChecked(node: AriaNode): boolean {
  return node.attributes.checked === 'true' || node.attributes.pressed === 'true' || node.attributes.selected === 'true';
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
