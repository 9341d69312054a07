import type { Page } from 'playwright-core';
import type { FrameSummary } from '../shared/observation.ts';
import { httpOrigin } from '../shared/origin.ts';
import type { Deadline } from './deadline.ts';
import type { Confinement } from './egress/confinement.ts';

/** Most iframes whose origin one capture looks up; any beyond are withheld unseen. */
const MAX_FRAMES_RESOLVED = 32;
/** Longest one iframe's look-up may take, in ms. */
const FRAME_LOOKUP_MS = 500;

const IFRAME_LINE = /^(\s*)- iframe\b.*\[ref=([a-z0-9]+)\]/;
const REF_PREFIX = /\[ref=(f\d+)e\d+\]/;

/** A capture's snapshot lines with the content of foreign frames taken out, and every frame's summary. */
export interface ConfinedFrames {
  readonly lines: string[];
  readonly frames: FrameSummary[];
}

/**
 * Frames in an observation (README "Confinement"): every `iframe` node of the AI-mode snapshot
 * gets a summary (its ref, the prefix of the refs inside it, its document's origin) and, when
 * that origin is not one the page may navigate to (the run's), its subtree is removed from the
 * lines and the summary says `withheld`. A frame without an http(s) document has the origin its
 * `src` asks for (a blocked or pending load: withheld unless it is the run's), or else, with only
 * a local document (srcdoc, about:blank), the origin of the frame that holds it. A frame whose origin cannot be read in time is withheld.
 * Reads the page only (element handles and frame URLs); never throws for a page that changed.
 */
export async function confineFrames(deadline: Deadline, page: Page, lines: readonly string[], confinement: Confinement): Promise<ConfinedFrames> {
  const out: string[] = [];
  const frames: FrameSummary[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] as string;
    const match = IFRAME_LINE.exec(line);
    if (!match) {
      out.push(line);
      continue;
    }
    const depth = (match[1] ?? '').length;
    const reference = match[2] as string;
    let end = index + 1;
    while (end < lines.length && indentOf(lines[end] as string) > depth) end++;
    const prefix = lines
      .slice(index + 1, end)
      .map((child) => REF_PREFIX.exec(child)?.[1])
      .find((found) => found !== undefined);
    const origin = frames.length < MAX_FRAMES_RESOLVED ? await frameOrigin(deadline, page, reference) : undefined;
    const withheld = origin === undefined || confinement.documentVerdict(`${origin}/`) !== undefined;
    frames.push({ reference, ...(prefix !== undefined ? { prefix } : {}), origin: origin ?? 'null', withheld });
    if (withheld) {
      out.push(line.replace(/:$/, ''));
      index = end - 1;
    } else {
      out.push(line);
    }
  }
  return { lines: out, frames };
}

/** The origin of the document in the iframe `reference` names, as described in {@link confineFrames}. */
async function frameOrigin(deadline: Deadline, page: Page, reference: string): Promise<string | undefined> {
  const timeout = Math.max(1, Math.min(FRAME_LOOKUP_MS, deadline.remainingMs()));
  try {
    const element = await page.getByRef(reference).elementHandle({ timeout });
    try {
      const content = await element.contentFrame();
      const holder = await element.ownerFrame();
      const own = httpOrigin(content?.url() ?? '');
      if (own !== undefined) return own;
      // No http(s) document (yet): a load that was blocked or is still pending is what its src
      // asked for; a frame with a local document only (srcdoc, about:blank) is its holder's.
      const holderUrl = holder?.url() ?? page.url();
      const source = await element.getAttribute('src');
      const requested = source === null || source.trim() === '' ? undefined : httpOrigin(new URL(source, holderUrl).href);
      return requested ?? httpOrigin(holderUrl);
    } finally {
      void element.dispose().catch(() => {});
    }
  } catch {
    return undefined;
  }
}

function indentOf(line: string): number {
  return /^\s*/.exec(line)?.[0].length ?? 0;
}
