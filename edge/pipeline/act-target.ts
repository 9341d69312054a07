import { and, desc, eq, isNotNull, sql } from 'drizzle-orm';
import type { ActTarget } from '../../shared/act-target.ts';
import { nodeOfSnapshotLine } from '../../shared/aria-snapshot.ts';
import { Observation } from '../../shared/observation.ts';
import { originOf } from '../../shared/origin.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import { type RunRow, toolCalls } from '../db/schema.ts';
import type { Ports } from '../ports.ts';

/** Most stored results searched for a reference. */
const MAX_RESULTS_SEARCHED = 32;

/**
 * The element `action` targets as the run's stored observations of `revision` showed it (see
 * shared/act-target.ts `ActTarget`): the snapshot line carrying `[ref=<reference>]` in any window
 * of that revision the run received (first windows and continuations alike), its role and
 * accessible name, the origin of its frame (from the observation's `frames` for a reference
 * inside an iframe, else the page's), the page's URL and title, and the input the act would send.
 * `inert` is true when the host marked the node `[inert]` (behind a modal dialog or inside an
 * inert subtree): no person can reach it, so an act on it is refused before anything is sent.
 * `preloaded`, when given, is those stored results already read with the proposal (newest first;
 * edge/pipeline/proposal-context.ts); else they are read here.
 * @returns undefined when no observation of that revision the run received shows the reference.
 */
export async function actTarget(
  ports: Ports,
  run: RunRow,
  action: BrowserAction,
  preloaded?: readonly unknown[],
): Promise<{ target: ActTarget; inert: boolean } | undefined> {
  const marker = `[ref=${action.reference}]`;
  const results =
    preloaded ??
    (
      await ports.db
        .select({ result: toolCalls.result })
        .from(toolCalls)
        .where(and(eq(toolCalls.runId, run.id), isNotNull(toolCalls.result), sql`instr(${toolCalls.result}, ${marker}) > 0`))
        .orderBy(desc(toolCalls.updatedAt))
        .limit(MAX_RESULTS_SEARCHED)
    ).map((row) => row.result);
  for (const result of results) {
    const observation = Observation.safeParse(result);
    if (!observation.success || observation.data.revision !== action.revision) continue;
    // The node whose own ref it is: page text may contain "[ref=e4]" too.
    const node = observation.data.snapshot
      .split('\n')
      .filter((candidate) => candidate.includes(marker))
      .map(nodeOfSnapshotLine)
      .find((candidate) => candidate?.ref === action.reference);
    if (node === undefined) continue;
    // A prefix alone does not make a frame (the main frame's refs may carry one too): the
    // observation's frames say which prefixes belong to iframes.
    const prefix = /^(f\d+)e\d+$/.exec(action.reference)?.[1];
    const frame = prefix === undefined ? undefined : observation.data.frames?.find((candidate) => candidate.prefix === prefix);
    const pageOrigin = originOf(observation.data.url) ?? 'null';
    const target: ActTarget = {
      reference: action.reference,
      role: node.role,
      name: node.name ?? '',
      frame_origin: frame?.origin ?? pageOrigin,
      page_url: observation.data.url,
      page_title: observation.data.title,
      ...(action.action === 'type' ? { text: action.text } : {}),
      ...(action.action === 'select' ? { option: action.value } : {}),
      ...(action.action === 'press' ? { key: action.key } : {}),
    };
    return { target, inert: node.attributes.inert === 'true' };
  }
  return undefined;
}
