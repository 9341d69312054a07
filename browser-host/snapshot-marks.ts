import type { CDPSession, Page } from 'playwright-core';
import { type AriaNode, parseAriaSnapshot, rewriteAriaLine, textOf } from '../shared/aria-snapshot.ts';
import type { IncompleteReason } from '../shared/observation.ts';
import type { Deadline } from './deadline.ts';

/**
 * What a person sees that Playwright's AI-mode snapshot leaves implicit, written into the
 * snapshot lines before they are recorded (issue 14: observations that miss nothing a person sees):
 * - names from content: a control whose accessible name comes from its content (a link or button
 *   holding only an image with `alt="Home"`) is printed by Playwright without its name, because
 *   the content shows it; the line gets that name back (`- link "Home" [ref=e3]:`), computed from
 *   the content the snapshot shows, as accessible-name computation does;
 * - reach: nodes no person can reach get `[inert]`: everything outside an open modal dialog
 *   (`showModal()`, or a visible `aria-modal="true"` dialog) other than that dialog's ancestors,
 *   and everything inside an `inert` subtree.
 * Closed shadow roots made by `attachShadow` are observed because the host opens them to its own
 * (isolated-world) reads ({@link CLOSED_SHADOW_ROOTS_SCRIPT}); closed roots it could not open
 * (declarative `<template shadowrootmode="closed">`) are reported as `closed_shadow_root` in the
 * observation's `incomplete`.
 */
export interface MarkedSnapshot {
  readonly lines: string[];
  readonly incomplete: IncompleteReason[];
}

/**
 * Roles whose accessible name comes from their content (WAI-ARIA 1.2 "name from: contents") and
 * whose name Playwright leaves out when the content shows it. Landmark-like roles with
 * identifying names (table, grid, dialog, columnheader, ...) always keep theirs.
 */
const NAME_FROM_CONTENT_ROLES = new Set([
  'button',
  'cell',
  'checkbox',
  'gridcell',
  'heading',
  'link',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'option',
  'radio',
  'row',
  'switch',
  'tab',
  'tooltip',
  'treeitem',
]);

/** A nameless line of a name-from-content role with a ref: `  - link [ref=e3] [cursor=pointer]:`. */
const NAMELESS_CANDIDATE = /^( *)- ([a-z]+)((?: \[[^\]"]*\])*) \[ref=[a-z0-9]+\]/;
/** Most inert subtrees (elements with an `inert` attribute) one capture reads. */
const MAX_INERT_ROOTS = 16;
/** Most modal dialogs one capture reads. */
const MAX_MODALS = 8;
/** Longest the probe for closed shadow roots may take, in ms. */
const CLOSED_ROOT_PROBE_MS = 1_000;

/**
 * Which refs a person cannot reach, read before the page snapshot they mark: Playwright resolves
 * `getByRef` against the last AI-mode snapshot taken, so the subtree snapshots this takes must
 * come first and the whole-page snapshot last (element refs stay the same across snapshots while
 * role and name do). `reachable` is set only while a modal dialog is open: the refs inside it.
 */
export interface PageReach {
  readonly reachable: ReadonlySet<string> | undefined;
  readonly inert: ReadonlySet<string>;
}

const EVERYTHING_REACHABLE: PageReach = { reachable: undefined, inert: new Set() };

/**
 * Reads {@link PageReach}: one locator count when the page has no modal dialog and no `inert`
 * attribute (the common case); otherwise one AI-mode snapshot of each modal dialog (at most 8)
 * and inert subtree (at most 16). Call it right before the page's own `ariaSnapshot`. Never
 * throws: a page that changes meanwhile simply gets no marks.
 */
export async function readReach(deadline: Deadline, page: Page): Promise<PageReach> {
  const timeout = Math.max(1, Math.min(deadline.remainingMs(), 2_000));
  try {
    // One count in the common case: no modal dialog, nothing inert.
    if ((await page.locator('dialog:modal, [aria-modal="true"], [inert]').count()) === 0) return EVERYTHING_REACHABLE;
    const modals = page.locator('dialog:modal, [aria-modal="true"]:visible');
    const inertRoots = page.locator('[inert]');
    const [modalCount, inertCount] = await Promise.all([modals.count(), inertRoots.count()]);
    const refsIn = async (locator: ReturnType<Page['locator']>, count: number, most: number) => {
      const snapshots = await Promise.all(
        Array.from({ length: Math.min(count, most) }, (_, index) => locator.nth(index).ariaSnapshot({ mode: 'ai', timeout, signal: deadline.signal })),
      );
      return new Set(snapshots.flatMap((text) => [...text.matchAll(/\[ref=([a-z0-9]+)\]/g)].map((found) => found[1] as string)));
    };
    const [reachable, inert] = await Promise.all([refsIn(modals, modalCount, MAX_MODALS), refsIn(inertRoots, inertCount, MAX_INERT_ROOTS)]);
    return { reachable: modalCount > 0 ? reachable : undefined, inert };
  } catch {
    return EVERYTHING_REACHABLE;
  }
}

/**
 * Writes names from content and `[inert]` marks into `lines` (a whole snapshot of `page`, taken
 * right after `reach` was read) and says what could not be observed (one CDP document read per
 * document for closed roots). Never throws.
 */
export async function markSnapshot(
  deadline: Deadline,
  page: Page,
  lines: readonly string[],
  reach: PageReach,
  probe: ClosedRootProbe,
): Promise<MarkedSnapshot> {
  const closedRoots = await probe.closedRoots(deadline, page);
  return { lines: markNamesAndReach(lines, reach), incomplete: closedRoots > 0 ? ['closed_shadow_root'] : [] };
}

/** Names from content, then `[inert]` marks from `reach`: the lines a capture records. Pure. */
export function markNamesAndReach(lines: readonly string[], reach: PageReach): string[] {
  const named = withContentNames(lines);
  return reach.reachable === undefined && reach.inert.size === 0 ? named : markInert(named, reach.reachable, reach.inert);
}

/**
 * `lines` with the name of every nameless, ref-bearing node of a name-from-content role written
 * in: the rendered text of its subtree (names of its children, their text and inline values,
 * whitespace collapsed), when that text is not empty. Pure; every other line is left as it is.
 */
export function withContentNames(lines: readonly string[]): string[] {
  const out = [...lines];
  for (let index = 0; index < lines.length; index++) {
    const match = NAMELESS_CANDIDATE.exec(lines[index] as string);
    if (!match || !NAME_FROM_CONTENT_ROLES.has(match[2] as string)) continue;
    const depth = (match[1] ?? '').length;
    let end = index + 1;
    while (end < lines.length && indentOf(lines[end] as string) > depth) end++;
    const [node] = parseAriaSnapshot(lines.slice(index, end).join('\n'));
    if (node === undefined || node.name !== undefined) continue;
    const name = contentName(node);
    if (name === '') continue;
    out[index] = rewriteAriaLine(lines[index] as string, (parsed) => ({ ...parsed, name }));
  }
  return out;
}

/** The name a node's content gives it: its children's names and text, and its inline value. */
function contentName(node: AriaNode): string {
  const parts = node.children.map(textOf);
  if (node.value !== undefined) parts.push(node.value);
  return parts.join(' ').replace(/\s+/g, ' ').trim();
}

/**
 * `lines` with `[inert]` added to each ref-bearing node that is inside `inert` (refs of inert
 * subtrees) or, when `reachable` is given (a modal is open), neither in it nor an ancestor of a
 * node in it. Pure.
 */
export function markInert(lines: readonly string[], reachable: ReadonlySet<string> | undefined, inert: ReadonlySet<string>): string[] {
  const refs = lines.map((line) => /^ *- .*?\[ref=([a-z0-9]+)\]/.exec(line)?.[1]);
  const holdsReachable = new Array<boolean>(lines.length).fill(false);
  if (reachable !== undefined) {
    // A node holds reachable content when a later line inside its subtree is reachable.
    const open: number[] = [];
    for (let index = 0; index < lines.length; index++) {
      const depth = indentOf(lines[index] as string);
      while (open.length > 0 && indentOf(lines[open[open.length - 1] as number] as string) >= depth) open.pop();
      const ref = refs[index];
      if (ref !== undefined && reachable.has(ref)) for (const ancestor of open) holdsReachable[ancestor] = true;
      open.push(index);
    }
  }
  return lines.map((line, index) => {
    const ref = refs[index];
    if (ref === undefined) return line;
    const unreachable = inert.has(ref) || (reachable !== undefined && !reachable.has(ref) && !holdsReachable[index]);
    return unreachable ? rewriteAriaLine(line, (node) => ({ ...node, attributes: { ...node.attributes, inert: 'true' } })) : line;
  });
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/**
 * An init script for every document of a profile (main world, before the page's own scripts):
 * a shadow root the page asks to be closed is attached open, and the page's own `shadowRoot`
 * getter answers `null` for it, as a closed root does. Playwright reads pages from an isolated
 * world, whose `shadowRoot` is the browser's own, so the host's snapshots and `getByRef` reach
 * into such roots while the page's scripts still see a closed one.
 */
export const CLOSED_SHADOW_ROOTS_SCRIPT = `(() => {
  const attach = Element.prototype.attachShadow;
  const getter = Object.getOwnPropertyDescriptor(Element.prototype, 'shadowRoot');
  if (typeof attach !== 'function' || !getter || typeof getter.get !== 'function') return;
  const closedHosts = new WeakSet();
  const attachShadow = {
    attachShadow(init) {
      const closed = init !== null && typeof init === 'object' && init.mode === 'closed';
      const root = attach.call(this, closed ? Object.assign({}, init, { mode: 'open' }) : init);
      if (closed) closedHosts.add(this);
      return root;
    },
  }.attachShadow;
  const shadowRoot = {
    get shadowRoot() {
      return closedHosts.has(this) ? null : getter.get.call(this);
    },
  };
  Object.defineProperty(Element.prototype, 'attachShadow', { value: attachShadow, writable: true, configurable: true, enumerable: true });
  Object.defineProperty(Element.prototype, 'shadowRoot', {
    get: Object.getOwnPropertyDescriptor(shadowRoot, 'shadowRoot').get,
    configurable: true,
    enumerable: true,
  });
})();`;

/**
 * Counts the closed shadow roots the host could not open (declarative ones, made by the HTML
 * parser), once per document of the page: one CDP `DOM.getDocument` with `pierce`, bounded by
 * 1,000 ms and the deadline; cached until the main frame navigates. A probe that fails or runs
 * out of time counts none (the observation then claims nothing it did not check).
 */
export class ClosedRootProbe {
  #page: Page | undefined;
  #session: CDPSession | undefined;
  #count: number | undefined;

  async closedRoots(deadline: Deadline, page: Page): Promise<number> {
    if (this.#page !== page) {
      this.#page = page;
      this.#count = undefined;
      this.#session = undefined;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame() && this.#page === page) this.#count = undefined;
      });
    }
    if (this.#count !== undefined) return this.#count;
    try {
      this.#session ??= await page.context().newCDPSession(page);
      const session = this.#session;
      const reading = session.send('DOM.getDocument', { depth: -1, pierce: true });
      const probe = deadline.child(Math.max(1, Math.min(CLOSED_ROOT_PROBE_MS, deadline.remainingMs())));
      let document: Awaited<typeof reading> | undefined;
      try {
        document = await probe.race(reading);
      } catch {
        document = undefined;
      } finally {
        probe.dispose();
      }
      void session.send('DOM.disable').catch(() => {});
      if (document === undefined) return 0;
      this.#count = countClosedRoots(document.root);
      return this.#count;
    } catch {
      return 0;
    }
  }
}

interface DomNode {
  shadowRootType?: string;
  children?: DomNode[];
  shadowRoots?: DomNode[];
  contentDocument?: DomNode;
}

function countClosedRoots(root: DomNode): number {
  let count = 0;
  const stack: DomNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop() as DomNode;
    if (node.shadowRootType === 'closed') count++;
    stack.push(...(node.children ?? []), ...(node.shadowRoots ?? []), ...(node.contentDocument ? [node.contentDocument] : []));
  }
  return count;
}
