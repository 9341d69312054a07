import type { CDPSession } from 'playwright-core';
import type { ViewportPoint } from '../shared/tool-arguments.ts';
import type { Deadline } from './deadline.ts';
import { HostError } from './host-error.ts';
import { isolatedWorldOf } from './page/isolated-world.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { ownRefOfLine } from './snapshot/marks.ts';

/** The CDP object group of a hit test's remote objects, released when it answers. */
const HIT_TEST_OBJECTS = 'governed-browser-hit-test';
/** The name Playwright gives the (isolated) world its selectors and snapshots run in, up to a per-page suffix. */
const PLAYWRIGHT_UTILITY_WORLD = '__playwright_utility_world_';
/** Most actionable candidates one hit test considers, nearest first. */
const MAX_CANDIDATES = 16;

/**
 * The hit test itself, run in the host's isolated world of the main frame (the page's scripts can
 * neither see it nor replace `elementFromPoint`, `shadowRoot` or `contentDocument` there): the
 * element at the point, descending into open shadow roots and same-origin iframes (their
 * `contentDocument` is null to this world for any other origin, so a foreign frame stops the
 * descent at its iframe element; so does a frame still on its initial about:blank whose src asks
 * for another origin, a load the host blocked), with the point translated into each frame's viewport. Answers
 * `'outside'` for a point outside the viewport, else `{owner, candidates}`: the iframe element
 * holding the document the element is in (null for the main document) and the actionable elements
 * from the element up to that document's root, nearest first (a label's control before the label);
 * an iframe the descent stopped at is its own only candidate.
 */
const HIT_TEST_FUNCTION = `function (x, y, maxCandidates) {
  if (!(x >= 0 && y >= 0 && x < innerWidth && y < innerHeight)) return 'outside';
  const INTERACTIVE_ROLES = new Set(['button', 'checkbox', 'combobox', 'link', 'listbox', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'radio', 'scrollbar', 'searchbox', 'slider', 'spinbutton', 'switch', 'tab', 'textbox', 'treeitem', 'gridcell']);
  const actionable = (element) => {
    const name = element.localName;
    if ((name === 'a' || name === 'area') && element.hasAttribute('href')) return true;
    if (name === 'button' || name === 'select' || name === 'textarea' || name === 'summary' || name === 'option') return true;
    if (name === 'input') return (element.getAttribute('type') || '').toLowerCase() !== 'hidden';
    const role = (element.getAttribute('role') || '').trim().split(/\\s+/)[0];
    if (INTERACTIVE_ROLES.has(role)) return true;
    const editable = element.getAttribute('contenteditable');
    if (editable !== null && editable.toLowerCase() !== 'false') return true;
    return element.hasAttribute('tabindex');
  };
  let doc = document;
  let owner = null;
  let px = x;
  let py = y;
  let hit = null;
  for (let depth = 0; depth < 16; depth++) {
    let element = doc.elementFromPoint(px, py);
    for (let inner = 0; element && element.shadowRoot && inner < 32; inner++) {
      const deeper = element.shadowRoot.elementFromPoint(px, py);
      if (!deeper || deeper === element) break;
      element = deeper;
    }
    if (!element) break;
    hit = element;
    if (element.localName !== 'iframe' && element.localName !== 'frame') break;
    const content = element.contentDocument;
    if (!content) return { owner, candidates: [element] };
    // A frame whose load of another origin was blocked (or is pending) holds only its initial
    // about:blank, readable here: it stands for what its src asked for, as frame-confinement.ts
    // says, so the point is on that frame, never inside its blank document.
    if (!/^https?:$/.test(content.location.protocol)) {
      try {
        const asked = new URL(element.getAttribute('src') || 'about:blank', doc.baseURI);
        if (/^https?:$/.test(asked.protocol) && asked.origin !== doc.location.origin) return { owner, candidates: [element] };
      } catch (error) {}
    }
    const box = element.getBoundingClientRect();
    const style = getComputedStyle(element);
    px -= box.left + element.clientLeft + parseFloat(style.paddingLeft || '0');
    py -= box.top + element.clientTop + parseFloat(style.paddingTop || '0');
    owner = element;
    doc = content;
    hit = null;
  }
  const candidates = [];
  for (let node = hit; node && candidates.length < maxCandidates; ) {
    if (node.nodeType === 1) {
      if (node.localName === 'label' && node.control) candidates.push(node.control);
      if (actionable(node)) candidates.push(node);
    }
    node = node.parentNode && node.parentNode.nodeType === 11 ? node.parentNode.host : node.parentNode;
  }
  return { owner, candidates };
}`;

/** What CDP answers for an evaluation or a function call. */
interface RemoteAnswer {
  result: { type: string; value?: unknown; objectId?: string };
  exceptionDetails?: { text?: string; exception?: { description?: string } };
}

/**
 * The snapshot reference of the element at `point` of revision `revision` (1.5.0, `page.hit_test`),
 * in viewport CSS px (the screenshot's pixels). Reads only; never sends input. In order:
 * 1. `revision` must be the page's latest and its references trusted, else `stale_revision`;
 * 2. the point must lie inside the viewport, else `invalid_params`;
 * 3. the element there is found in the host's isolated world, through open shadow roots and
 *    same-origin iframes, and the actionable elements from it up to its document's root collected
 *    (links, buttons, form controls, elements with an interactive role, `contenteditable` or
 *    `tabindex`; a label stands for its control first); a point on an iframe of another origin
 *    stands for that iframe element;
 * 4. the first of them whose reference, as Playwright's snapshot gave it (read in Playwright's own
 *    isolated world, by node, never by the page's code), is a node of the revision's snapshot is
 *    the answer; none: `invalid_params`.
 * @throws HostError('stale_revision' | 'invalid_params'); HostError('deadline_exceeded') when the
 *   deadline passes; HostError('action_failed') when the page cannot be read.
 */
export async function hitTest(deadline: Deadline, browser: ProfileBrowser, revision: number, point: ViewportPoint): Promise<string> {
  if (revision !== browser.revisions.current || browser.revisions.invalidation !== undefined) {
    const why = browser.revisions.invalidation ?? `the page's latest is ${browser.revisions.current}`;
    throw new HostError('stale_revision', `revision ${revision} can no longer be pointed at (${why}); observe again`);
  }
  const refs = new Set((browser.revisions.latest?.lines ?? []).flatMap((line) => ownRefOfLine(line) ?? []));
  const page = await browser.page(deadline);
  return isolatedWorldOf(page).withContext(deadline, async (session, contextId) => {
    const send = <T>(method: string, params: object): Promise<T> => deadline.race(session.send(method as never, params as never) as Promise<T>);
    const contexts = utilityContexts(session);
    await send('Runtime.enable', {});
    try {
      const found = await send<RemoteAnswer>('Runtime.evaluate', {
        expression: `(${HIT_TEST_FUNCTION})(${point.x}, ${point.y}, ${MAX_CANDIDATES})`,
        contextId,
        returnByValue: false,
        objectGroup: HIT_TEST_OBJECTS,
      });
      if (found.exceptionDetails !== undefined) throw new HostError('action_failed', `the page could not be hit-tested: ${describe(found)}`);
      if (found.result.value === 'outside') {
        throw new HostError('invalid_params', `point: (${point.x}, ${point.y}) is outside the viewport of revision ${revision}`);
      }
      const ownerId = await property(send, found.result.objectId, 'owner');
      const frameId = ownerId === undefined ? await mainFrameId(send) : await contentFrameOf(send, ownerId);
      const candidates = await elements(send, await property(send, found.result.objectId, 'candidates'));
      const utility = frameId === undefined ? undefined : contexts.get(frameId);
      for (const candidate of candidates) {
        if (utility === undefined) break;
        const reference = await snapshotRefOf(send, candidate, utility);
        if (reference !== undefined && refs.has(reference)) return reference;
      }
      throw new HostError('invalid_params', `point: nothing actionable of revision ${revision} is at (${point.x}, ${point.y})`);
    } finally {
      contexts.stop();
      // The remote objects of this hit test, in both worlds, are let go; the session stays for the next.
      void session.send('Runtime.releaseObjectGroup', { objectGroup: HIT_TEST_OBJECTS }).catch(() => {});
      void session.send('Runtime.disable').catch(() => {});
    }
  });
}

/** The id of the page's main frame. */
async function mainFrameId(send: Send): Promise<string> {
  const { frameTree } = await send<{ frameTree: { frame: { id: string } } }>('Page.getFrameTree', {});
  return frameTree.frame.id;
}

/**
 * Playwright's utility world per frame id, as the session's `Runtime.enable` reports every
 * existing context (call before enabling); `stop` ends the listening.
 */
function utilityContexts(session: CDPSession): Map<string, number> & { stop(): void } {
  const contexts = new Map<string, number>() as Map<string, number> & { stop(): void };
  const listener = (event: { context: { id: number; name: string; auxData?: { frameId?: string } } }) => {
    const frameId = event.context.auxData?.frameId;
    if (frameId !== undefined && event.context.name.startsWith(PLAYWRIGHT_UTILITY_WORLD)) contexts.set(frameId, event.context.id);
  };
  session.on('Runtime.executionContextCreated', listener);
  contexts.stop = () => session.off('Runtime.executionContextCreated', listener);
  return contexts;
}

type Send = <T>(method: string, params: object) => Promise<T>;

/** The object id of `name` of the remote object `objectId`, undefined for null. */
async function property(send: Send, objectId: string | undefined, name: string): Promise<string | undefined> {
  if (objectId === undefined) return undefined;
  const answer = await send<RemoteAnswer>('Runtime.callFunctionOn', {
    objectId,
    functionDeclaration: 'function (name) { return this[name]; }',
    arguments: [{ value: name }],
    returnByValue: false,
    objectGroup: HIT_TEST_OBJECTS,
  });
  return answer.result.objectId;
}

/** The object ids of the items of the remote array `objectId`, in order. */
async function elements(send: Send, objectId: string | undefined): Promise<string[]> {
  if (objectId === undefined) return [];
  const { result } = await send<{ result: { name: string; value?: { objectId?: string } }[] }>('Runtime.getProperties', {
    objectId,
    ownProperties: true,
  });
  return result
    .filter((entry) => /^\d+$/.test(entry.name))
    .sort((a, b) => Number(a.name) - Number(b.name))
    .flatMap((entry) => entry.value?.objectId ?? []);
}

/** The id of the frame the iframe element `objectId` holds. */
async function contentFrameOf(send: Send, objectId: string): Promise<string | undefined> {
  const { node } = await send<{ node: { frameId?: string } }>('DOM.describeNode', { objectId });
  return node.frameId;
}

/**
 * The reference Playwright's AI-mode snapshot gave the element `objectId` (the element, found by
 * its DOM node, read in Playwright's utility world of its frame, `utility`), if it has one.
 */
async function snapshotRefOf(send: Send, objectId: string, utility: number): Promise<string | undefined> {
  const { node } = await send<{ node: { backendNodeId: number } }>('DOM.describeNode', { objectId });
  const resolved = await send<{ object: { objectId?: string } }>('DOM.resolveNode', {
    backendNodeId: node.backendNodeId,
    executionContextId: utility,
    objectGroup: HIT_TEST_OBJECTS,
  });
  if (resolved.object.objectId === undefined) return undefined;
  const answer = await send<RemoteAnswer>('Runtime.callFunctionOn', {
    objectId: resolved.object.objectId,
    functionDeclaration: 'function () { const ref = this._ariaRef; return ref && typeof ref.ref === "string" ? ref.ref : null; }',
    returnByValue: true,
  });
  return typeof answer.result.value === 'string' ? answer.result.value : undefined;
}

function describe(answer: RemoteAnswer): string {
  return answer.exceptionDetails?.exception?.description ?? answer.exceptionDetails?.text ?? 'evaluation failed';
}
