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
  /** The document's title as the census read it (`document.title`, as `page.title()` reads it). */
  readonly title: string;
}

/**
 * The census expression: one walk over the document and every shadow root reachable from it;
 * where the walk saw an element a selector could match (an `input`; a `dialog`, an `inert` or an
 * `aria-modal` attribute), that root's count is the selector's own `querySelectorAll`, else 0.
 * The document's title comes with it.
 */
const CENSUS_SCRIPT = `(() => {
  // The element's own accessors, not its properties: a form's named fields shadow those (<input name=hasAttribute>).
  const hasAttribute = Element.prototype.hasAttribute;
  const localNameOf = Object.getOwnPropertyDescriptor(Element.prototype, 'localName').get;
  const shadowRootOf = Object.getOwnPropertyDescriptor(Element.prototype, 'shadowRoot').get;
  const census = { reach: 0, passwordFields: 0, identifierFields: 0, title: document.title };
  const roots = [document];
  for (let index = 0; index < roots.length; index++) {
    const root = roots[index];
    let inputs = false;
    let limitsReach = false;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT);
    for (let element = walker.nextNode(); element !== null; element = walker.nextNode()) {
      const shadowRoot = shadowRootOf.call(element);
      if (shadowRoot) roots.push(shadowRoot);
      const name = localNameOf.call(element);
      if (name === 'input') inputs = true;
      if (name === 'dialog' || hasAttribute.call(element, 'inert') || hasAttribute.call(element, 'aria-modal')) limitsReach = true;
    }
    if (limitsReach) census.reach += root.querySelectorAll(${JSON.stringify(REACH_CANDIDATES)}).length;
    if (inputs) {
      census.passwordFields += root.querySelectorAll(${JSON.stringify(PASSWORD_FIELDS)}).length;
      census.identifierFields += root.querySelectorAll(${JSON.stringify(IDENTIFIER_FIELDS)}).length;
    }
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
    const counted = counts.every((count) => Number.isInteger(count) && (count as number) >= 0);
    return counted && typeof census.title === 'string' ? census : undefined;
  } catch {
    return undefined;
  }
}
