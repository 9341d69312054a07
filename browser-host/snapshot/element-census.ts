import type { Page } from 'playwright-core';
import type { Deadline } from '../deadline.ts';
import { isolatedWorldOf } from '../page/isolated-world.ts';

/** The elements that may put parts of a page out of reach (marks.ts `readReach`): modal dialogs and `inert` subtrees. */
export const REACH_CANDIDATES = 'dialog:modal, [aria-modal="true"], [inert]';
/** A password field as the sign-in evidence reads it (when visible; site-verification/sign-in-evidence.ts). */
export const PASSWORD_FIELDS = 'input[type=password]';
/** An identifier field as the sign-in evidence reads it: visible inputs of these kinds. */
export const IDENTIFIER_FIELDS = [
  'input[type=email]',
  'input[autocomplete~=username i]',
  'input[autocomplete~=email i]',
  'input[autocomplete~=webauthn i]',
  ...['username', 'login', 'email', 'identifier', 'userid'].flatMap((name) => [`input[name=${name} i]`, `input[id=${name} i]`]),
].join(', ');
/**
 * How many elements of the main frame's document (open shadow roots, and the closed ones the host
 * opened for itself, included; iframes not) each later read of a capture could find, counted in
 * one pass in the host's isolated world (issue 35: one round trip where three locator counts were
 * made): `reach` (modal dialogs and `inert` subtrees, snapshot/marks.ts), `passwordFields` and
 * `identifierFields` (the sign-in evidence's fields, visible or not). Each count is an upper
 * bound of what the Playwright read it stands for would find, since it counts the same selectors
 * over the same trees without the visibility test: a zero means that read can be skipped, and
 * anything else leaves the read to be made as before.
 */
export interface ElementCensus {
  readonly reach: number;
  readonly passwordFields: number;
  readonly identifierFields: number;
}

/** The census expression: counts each selector over the document and every shadow root reachable from it. */
const CENSUS_SCRIPT = `(() => {
  const selectors = ${JSON.stringify({ reach: REACH_CANDIDATES, passwordFields: PASSWORD_FIELDS, identifierFields: IDENTIFIER_FIELDS })};
  const census = { reach: 0, passwordFields: 0, identifierFields: 0 };
  const roots = [document];
  for (let index = 0; index < roots.length; index++) {
    const root = roots[index];
    for (const name of Object.keys(selectors)) census[name] += root.querySelectorAll(selectors[name]).length;
    for (const element of root.querySelectorAll('*')) if (element.shadowRoot) roots.push(element.shadowRoot);
  }
  return census;
})()`;

/**
 * Reads the {@link ElementCensus} of `page`'s current document, bounded by `deadline`; undefined
 * when it could not be read (the document went away, the deadline passed): the reads it would
 * have spared are then made in full. Never throws.
 */
export async function readElementCensus(deadline: Deadline, page: Page): Promise<ElementCensus | undefined> {
  try {
    const census = await isolatedWorldOf(page).evaluate<ElementCensus>(deadline, CENSUS_SCRIPT);
    const counts = [census?.reach, census?.passwordFields, census?.identifierFields];
    return counts.every((count) => Number.isInteger(count) && (count as number) >= 0) ? census : undefined;
  } catch {
    return undefined;
  }
}
