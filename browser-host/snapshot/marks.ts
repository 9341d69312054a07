import type { CDPSession, Page } from 'playwright-core';
import { type AriaNode, nodeOfSnapshotLine, parseAriaSnapshot, parseAriaSnapshotLines, rewriteAriaLine, walkAria } from '../../shared/aria-snapshot.ts';
import type { IncompleteReason } from '../../shared/observation.ts';
import type { Deadline } from '../deadline.ts';
import { type PiercedDomNode, walkPiercedDom } from '../page/pierced-dom.ts';
import { type ElementCensus, REACH_CANDIDATES } from './element-census.ts';

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
const MAX_INERT_ROOTS = 64;
/** Most modal dialogs one capture reads. */
const MAX_MODALS = 8;
/** Longest the probe for closed shadow roots may take, in ms. */
const CLOSED_ROOT_PROBE_MS = 1_000;

/**
 * What a person cannot reach, read before the page snapshot it marks: Playwright resolves
 * `getByRef` against the last AI-mode snapshot taken, so the subtree snapshots this takes must
 * come first and the whole-page snapshot last (element refs stay the same across snapshots while
 * role and name do). `modalRoots`, set only while a modal dialog is open: the refs of the topmost
 * modal dialogs themselves (everything outside them but their ancestors is out of reach).
 * `inert`: the refs of the nodes inside `inert` subtrees.
 */
export interface PageReach {
  readonly modalRoots: ReadonlySet<string> | undefined;
  readonly inert: ReadonlySet<string>;
}

const EVERYTHING_REACHABLE: PageReach = { modalRoots: undefined, inert: new Set() };

/** The refs of the nodes of a snapshot: each node's own `[ref=...]`, never text that looks like one. */
function ownRefs(snapshot: string): string[] {
  return [...walkAria(parseAriaSnapshot(snapshot))].flatMap((node) => (node.ref === undefined ? [] : [node.ref]));
}

/**
 * The first read of {@link readReach}, on its own: how many elements may put parts of the page
 * out of reach (modal dialogs, `inert` subtrees), by one locator count, which takes no snapshot,
 * so it may run beside reads that resolve references against the page's last snapshot (an act's
 * reference matches). Raced against the deadline (a count has no timeout of its own, and a hung
 * page must not hold a capture past it). Never rejects: undefined when it could not be read.
 */
export function countReachCandidates(deadline: Deadline, page: Page): Promise<number | undefined> {
  return deadline.race(page.locator(REACH_CANDIDATES).count()).catch(() => undefined);
}

/**
 * Reads {@link PageReach}: one locator count when the page has no modal dialog and no `inert`
 * attribute (the common case); otherwise, for each modal dialog (at most 8), whether it is the one
 * on top (a hit test at its centre lands inside it: a dialog under another's backdrop is inert
 * too) and its own ref, and one AI-mode snapshot of each non-empty inert subtree (at most 64).
 * Call it right before the page's own `ariaSnapshot`. With a `census` that counted no candidate
 * (element-census.ts), nothing is read; with `candidates` (a {@link countReachCandidates} begun
 * earlier), that count is the first read; a count that failed reads as everything reachable. The subtree snapshots replace what `getByRef` resolves
 * against, so nothing that resolves references may run beside them. Never throws: a page that
 * changes meanwhile gets no modal marks (see {@link markInert}).
 */
export async function readReach(deadline: Deadline, page: Page, census?: ElementCensus, candidates?: Promise<number | undefined>): Promise<PageReach> {
  const timeout = Math.max(1, Math.min(deadline.remainingMs(), 2_000));
  if (census?.reach === 0) return EVERYTHING_REACHABLE;
  try {
    const counted = await (candidates ?? countReachCandidates(deadline, page));
    if (counted === undefined || counted === 0) return EVERYTHING_REACHABLE;
    const modals = page.locator('dialog:modal, [aria-modal="true"]:visible');
    const inertRoots = page.locator('[inert]:not(:empty)');
    const [modalCount, inertCount] = await deadline.race(Promise.all([modals.count(), inertRoots.count()]));
    const onTop = await deadline.race(
      Promise.all(
        Array.from({ length: Math.min(modalCount, MAX_MODALS) }, (_, index) =>
          modals.nth(index).evaluate((element) => {
            const box = element.getBoundingClientRect();
            const root = element.getRootNode() as Document | ShadowRoot;
            const hit = root.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
            return hit !== null && (hit === element || element.contains(hit));
          }),
        ),
      ),
    );
    const topmost = onTop.flatMap((top, index) => (top ? [index] : []));
    const [modalRefs, inertRefs] = await Promise.all([
      Promise.all(
        (topmost.length > 0 ? topmost : onTop.map((_, index) => index)).map(async (index) => {
          const text = await modals.nth(index).ariaSnapshot({ mode: 'ai', timeout, signal: deadline.signal, depth: 0 });
          return parseAriaSnapshot(text)[0]?.ref;
        }),
      ),
      Promise.all(
        Array.from({ length: Math.min(inertCount, MAX_INERT_ROOTS) }, (_, index) =>
          inertRoots.nth(index).ariaSnapshot({ mode: 'ai', timeout, signal: deadline.signal }).then(ownRefs),
        ),
      ),
    ]);
    const roots = modalRefs.filter((ref): ref is string => ref !== undefined);
    return { modalRoots: modalCount > 0 && roots.length > 0 ? new Set(roots) : undefined, inert: new Set(inertRefs.flat()) };
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
  return reach.modalRoots === undefined && reach.inert.size === 0 ? named : markInert(named, reach.modalRoots, reach.inert);
}

/** Roles of controls embedded in another's content: their value, not their name, would count. */
const EMBEDDED_CONTROL_ROLES = new Set(['textbox', 'searchbox', 'combobox', 'listbox', 'slider', 'spinbutton', 'checkbox', 'radio', 'switch']);

/**
 * `lines` with the name of a nameless, ref-bearing node of a name-from-content role written in,
 * where the snapshot shows exactly what that name is: Playwright left it out because elements it
 * shows with their own refs gave it, and exactly one piece of content gives it (one image's alt
 * text, one child's name, one text), with no embedded control and nothing `aria-hidden` inside.
 * Where several pieces would have to be joined (spacing between inline pieces is not in the
 * snapshot) or a piece is unknown, the line is left as Playwright printed it. Pure.
 */
export function withContentNames(lines: readonly string[]): string[] {
  const out = [...lines];
  for (let index = 0; index < lines.length; index++) {
    const match = NAMELESS_CANDIDATE.exec(lines[index] as string);
    if (!match || !NAME_FROM_CONTENT_ROLES.has(match[2] as string)) continue;
    const depth = (match[1] ?? '').length;
    let end = index + 1;
    while (end < lines.length && indentOf(lines[end] as string) > depth) end++;
    const [node] = parseAriaSnapshotLines(lines.slice(index, end));
    if (node === undefined || node.name !== undefined || !node.children.some((child) => child.ref !== undefined)) continue;
    const name = singlePieceName(node);
    if (name === undefined) continue;
    out[index] = rewriteAriaLine(lines[index] as string, (parsed) => ({ ...parsed, name }));
  }
  return out;
}

/** The one piece of content that names `node`, or undefined when there is not exactly one known piece. */
function singlePieceName(node: AriaNode): string | undefined {
  const pieces: string[] = [];
  if (node.value !== undefined && node.value.trim() !== '') pieces.push(node.value);
  const visit = (current: AriaNode): boolean => {
    if (EMBEDDED_CONTROL_ROLES.has(current.role) || current.attributes['aria-hidden'] === 'true') return false;
    if (current.role === 'text') {
      if (current.value?.trim()) pieces.push(current.value);
      return true;
    }
    if (current.name !== undefined) {
      pieces.push(current.name);
      return true;
    }
    if (current.value !== undefined && current.value.trim() !== '') pieces.push(current.value);
    // A nameless child whose own content is not shown: its part of the name is unknown.
    if (current.ref !== undefined && current.children.length === 0 && current.value === undefined) return false;
    return current.children.every(visit);
  };
  if (!node.children.every(visit) || pieces.length !== 1) return undefined;
  const name = (pieces[0] as string).replace(/\s+/g, ' ').trim();
  return name === '' ? undefined : name;
}

/**
 * `lines` with `[inert]` added to each node no person can reach: each node whose own ref is in
 * `inert` (an inert subtree's) and everything under it; and, when `modalRoots` is given (a modal
 * is open) and one of them is in `lines`, every node outside those modal dialogs except their
 * ancestors, with or without a ref of its own. When no modal root is in `lines` (the page closed
 * the dialog between the two reads), only the inert marks are written. Pure.
 */
export function markInert(lines: readonly string[], modalRoots: ReadonlySet<string> | undefined, inert: ReadonlySet<string>): string[] {
  const refs = lines.map(ownRefOfLine);
  const depths = lines.map(indentOf);
  const roots = modalRoots !== undefined && refs.some((ref) => ref !== undefined && modalRoots.has(ref)) ? modalRoots : undefined;
  const unreachable = new Array<boolean>(lines.length).fill(false);
  const holdsModal = new Array<boolean>(lines.length).fill(false);
  const open: number[] = [];
  // Depth of the modal root or inert node the current line is inside, if any.
  let insideModalAt: number | undefined;
  let insideInertAt: number | undefined;
  for (let index = 0; index < lines.length; index++) {
    const depth = depths[index] as number;
    while (open.length > 0 && (depths[open[open.length - 1] as number] as number) >= depth) open.pop();
    if (insideModalAt !== undefined && depth <= insideModalAt) insideModalAt = undefined;
    if (insideInertAt !== undefined && depth <= insideInertAt) insideInertAt = undefined;
    const ref = refs[index];
    if (roots !== undefined && ref !== undefined && roots.has(ref)) {
      insideModalAt = depth;
      for (const ancestor of open) holdsModal[ancestor] = true;
    }
    if (insideInertAt === undefined && ref !== undefined && inert.has(ref)) insideInertAt = depth;
    unreachable[index] = insideInertAt !== undefined || (roots !== undefined && insideModalAt === undefined);
    open.push(index);
  }
  return lines.map((line, index) => {
    if (!unreachable[index] || holdsModal[index] || !NODE_LINE.test(line)) return line;
    return rewriteAriaLine(line, (node) => ({ ...node, attributes: { ...node.attributes, inert: 'true' } }));
  });
}

/** A node's own line (not a text node, not a property). */
const NODE_LINE = /^ *- (?:'|[a-zA-Z]+(?: |:|$))/;
/** An unquoted node key: role, optional JSON-string name, attributes, then the end or a colon. */
const PLAIN_KEY = /^ *- (?!text:)[a-zA-Z]+(?: "(?:[^"\\]|\\.)*")?((?: \[[^\]]*\])*)(?::|$)/;

/** The ref of a line's own node, never one in its name or text; undefined for text and properties. */
export function ownRefOfLine(line: string): string | undefined {
  const plain = PLAIN_KEY.exec(line);
  if (plain) return /\[ref=([a-z0-9]+)\]/.exec(plain[1] ?? '')?.[1];
  if (!/^ *- '/.test(line)) return undefined;
  return nodeOfSnapshotLine(line)?.ref;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/**
 * An init script for every document of a profile (main world, before the page's own scripts):
 * a shadow root the page asks to be closed is attached open, and the page's own `shadowRoot`
 * getter answers `null` for it and its `mode` says `closed`, as a closed root does; where the
 * browser would refuse the open root (an element that already has a declarative closed root),
 * the page gets exactly what the browser answers the closed request. Playwright reads pages from an isolated
 * world, whose `shadowRoot` is the browser's own, so the host's snapshots and `getByRef` reach
 * into such roots while the page's scripts still see a closed one.
 */
export const CLOSED_SHADOW_ROOTS_SCRIPT = `(() => {
  const attach = Element.prototype.attachShadow;
  const getter = Object.getOwnPropertyDescriptor(Element.prototype, 'shadowRoot');
  const modeGetter = Object.getOwnPropertyDescriptor(ShadowRoot.prototype, 'mode');
  if (typeof attach !== 'function' || !getter || typeof getter.get !== 'function' || !modeGetter || typeof modeGetter.get !== 'function') return;
  const closedHosts = new WeakSet();
  const openedRoots = new WeakSet();
  const attachShadow = {
    attachShadow(init) {
      if (init === null || typeof init !== 'object' || init.mode !== 'closed') return attach.apply(this, arguments);
      // Read as the browser reads the dictionary (inherited members count).
      const opened = { mode: 'open', delegatesFocus: init.delegatesFocus, slotAssignment: init.slotAssignment, clonable: init.clonable, serializable: init.serializable };
      let root;
      try {
        root = attach.call(this, opened);
      } catch (error) {
        // What the browser itself answers: an existing declarative closed root, or its own error.
        return attach.apply(this, arguments);
      }
      closedHosts.add(this);
      openedRoots.add(root);
      return root;
    },
  }.attachShadow;
  const patched = {
    get shadowRoot() {
      return closedHosts.has(this) ? null : getter.get.call(this);
    },
    get mode() {
      return openedRoots.has(this) ? 'closed' : modeGetter.get.call(this);
    },
  };
  Object.defineProperty(Element.prototype, 'attachShadow', { value: attachShadow, writable: true, configurable: true, enumerable: true });
  Object.defineProperty(Element.prototype, 'shadowRoot', { get: Object.getOwnPropertyDescriptor(patched, 'shadowRoot').get, configurable: true, enumerable: true });
  Object.defineProperty(ShadowRoot.prototype, 'mode', { get: Object.getOwnPropertyDescriptor(patched, 'mode').get, configurable: true, enumerable: true });
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
      let document: { root: PiercedDomNode } | undefined;
      try {
        document = (await probe.race(reading)) as { root: PiercedDomNode };
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

/** Closed shadow roots anywhere in a pierced DOM tree, frame documents included. */
function countClosedRoots(root: PiercedDomNode): number {
  let count = 0;
  walkPiercedDom(
    root,
    (node) => {
      if (node.shadowRootType === 'closed') count++;
      return true;
    },
    { intoFrames: true },
  );
  return count;
}
