import type { Page } from 'playwright-core';
import { nodeOfSnapshotLine } from '../shared/aria-snapshot.ts';
import { httpOrigin } from '../shared/origin.ts';
import type { ExpectedTarget } from '../shared/protocol.ts';
import type { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';
import type { ProfileBrowser } from './profile-browser.ts';
import { markNamesAndReach, type PageReach, readReach } from './snapshot/marks.ts';

/** One element an act touches and what it must still be; `about` names it in errors ("field 2", "the drag destination"). */
export interface TargetExpectation {
  readonly reference: string;
  readonly expected: ExpectedTarget;
  readonly about?: string;
}

/**
 * Checks, right before an act's input, that the element `reference` names is still what the
 * owner (or the policy) was shown (README "Confinement"): see {@link checkTargets}, for one element.
 * @throws as {@link checkTargets}
 */
export function checkTarget(deadline: Deadline, browser: ProfileBrowser, page: Page, reference: string, expected: ExpectedTarget): Promise<void> {
  return checkTargets(deadline, browser, page, [{ reference, expected }]);
}

/**
 * Checks, right before an act's first input, that every element it touches (`targets`, in order:
 * a drag's source and destination, each field of a fill_form and its submit) is still what the
 * owner (or the policy) was shown (README "Confinement": approvals bound to what the owner saw):
 * one fresh AI-mode snapshot of the page must still carry `[ref=<reference>]` for each (Playwright
 * keeps an element's ref only while its role and accessible name stay the same) with
 * `expected.role` and `expected.name`, and each element's frame must still be of
 * `expected.frame_origin` and one the page may navigate to. The snapshot assigns refs afresh only
 * to elements that changed, so the revision's other references keep working. Sends no input.
 * Names from content and `[inert]` marks are written in first, as a capture writes them
 * (snapshot/marks.ts). The first element that fails decides the error, its message led by its
 * `about` when given. `reachCandidates`: the reach read's first count when the caller began it
 * already (`countReachCandidates` of this page, beside the act's reference matches).
 * @throws HostError('target_changed') when an element is gone, relabelled, re-roled or now in
 *   another frame; HostError('not_actionable') when it is now inert (behind a modal dialog);
 *   HostError('outside_run_origins') when its frame is not of the run's origins;
 *   HostError('action_failed') when the check itself fails; nothing is sent in any case.
 */
export async function checkTargets(
  deadline: Deadline,
  browser: ProfileBrowser,
  page: Page,
  targets: readonly TargetExpectation[],
  reachCandidates?: Promise<number | undefined>,
): Promise<void> {
  if (targets.length === 0) return;
  const timeout = Math.max(1, deadline.remainingMs());
  let text: string;
  let reach: PageReach;
  try {
    // What a person cannot reach first: the snapshot getByRef resolves against must be the last one (snapshot/marks.ts).
    const reading = readReach(deadline, page, undefined, reachCandidates).then(async (found) => ({
      found,
      text: await page.ariaSnapshot({ mode: 'ai', timeout, signal: deadline.signal }),
    }));
    ({ found: reach, text } = await browser.trackCapture(reading));
  } catch (error) {
    const references = targets.map((target) => target.reference).join(', ');
    throw new HostError('action_failed', `could not check the target ${references}: ${firstLineOf(error)}; nothing was dispatched`);
  }
  // Names from content and inert marks, as the capture the owner was shown had them.
  const lines = markNamesAndReach(text.split('\n'), reach);
  for (const target of targets) {
    await checkOne(deadline, browser, page, lines, target);
  }
}

/** Checks one element against the snapshot `lines`; see {@link checkTargets}. */
async function checkOne(deadline: Deadline, browser: ProfileBrowser, page: Page, lines: readonly string[], target: TargetExpectation): Promise<void> {
  const { reference, expected } = target;
  const lead = target.about === undefined ? reference : `${target.about} (${reference})`;
  const marker = `[ref=${reference}]`;
  // The node whose own ref it is: page text may contain "[ref=e4]" too.
  let line = -1;
  let node: ReturnType<typeof nodeOfSnapshotLine>;
  for (let index = 0; index < lines.length && node === undefined; index++) {
    if (!(lines[index] as string).includes(marker)) continue;
    const candidate = nodeOfSnapshotLine(lines[index] as string);
    if (candidate?.ref === reference) [line, node] = [index, candidate];
  }
  const shown = `the ${expected.role} ${JSON.stringify(expected.name)}`;
  if (node === undefined) {
    throw new HostError('target_changed', `${lead} is no longer ${shown}: it was relabelled, re-roled or removed; nothing was dispatched`);
  }
  if (node.role !== expected.role || (node.name ?? '') !== expected.name) {
    throw new HostError('target_changed', `${lead} is now the ${node.role} ${JSON.stringify(node.name ?? '')}, not ${shown}; nothing was dispatched`);
  }
  if (node.attributes.inert === 'true') {
    throw new HostError(
      'not_actionable',
      `${lead} (${shown}) is inert: behind a modal dialog or inside an inert part of the page, where no person can reach it; nothing was dispatched`,
    );
  }
  // An element outside every iframe of the snapshot is the main frame's: its origin needs no round trip.
  const origin = insideIframe(lines, line) ? await frameOriginOf(page, reference, Math.max(1, deadline.remainingMs())) : httpOrigin(page.mainFrame().url());
  if (origin !== expected.frame_origin) {
    throw new HostError(
      'target_changed',
      `${lead} is now in a frame of ${origin ?? 'an unknown origin'}, not ${expected.frame_origin}; nothing was dispatched`,
    );
  }
  if (browser.confinement.documentVerdict(`${origin}/`) !== undefined) {
    throw new HostError('outside_run_origins', `${lead} is inside a frame of ${origin}, outside the run's origins; nothing was dispatched`);
  }
}

/** Whether the node on `lines[line]` lies under an `iframe` node of the snapshot (its content is the frame's document). */
function insideIframe(lines: readonly string[], line: number): boolean {
  let depth = indentOf(lines[line] as string);
  for (let index = line - 1; index >= 0 && depth > 0; index--) {
    const ancestor = lines[index] as string;
    const indent = indentOf(ancestor);
    if (indent >= depth || !/^ *- /.test(ancestor)) continue;
    depth = indent;
    if (nodeOfSnapshotLine(ancestor)?.role === 'iframe') return true;
  }
  return false;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** The origin of the frame holding the element; a local document (about:, srcdoc) has its parent's. */
async function frameOriginOf(page: Page, reference: string, timeoutMs: number): Promise<string | undefined> {
  try {
    const element = await page.getByRef(reference).elementHandle({ timeout: Math.min(timeoutMs, 2_000) });
    try {
      let frame = await element.ownerFrame();
      while (frame !== null) {
        const origin = httpOrigin(frame.url());
        if (origin !== undefined) return origin;
        frame = frame.parentFrame();
      }
      return undefined;
    } finally {
      void element.dispose().catch(() => {});
    }
  } catch {
    return undefined;
  }
}
