import { and, desc, eq, isNotNull, sql } from 'drizzle-orm';
import type { ActTarget, ElementTarget } from '../../shared/act-target.ts';
import { type FrameSummary, Observation } from '../../shared/observation.ts';
import type { ActArguments, ResolvedPoints, ViewportPoint } from '../../shared/tool-arguments.ts';
import { namesPoint, wireAction } from '../../shared/tool-arguments.ts';
import type { ToolCommand } from '../../shared/tools.ts';
import { type RunRow, toolCalls } from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { askLeaseHost, UnansweredQuestion } from './lease-host.ts';

/** Most stored results searched for the frame a point landed on. */
const MAX_RESULTS_SEARCHED = 32;

/**
 * Points for vision models (1.5.0, issue 33): an act may name a point `{x, y}` of the viewport
 * screenshot of its revision instead of a reference (and a drag `to_point` instead of
 * `to_reference`). Before anything is decided, the host hit-tests each point (`page.hit_test`,
 * reads only) to the reference of the actionable element there; from then on the act is exactly an
 * act on that reference: bound to its target as the observation showed it, decided by policy on
 * its role, name and frame, checked by the host right before the input. The references are kept in
 * the call's phases (`target.reference`, `target.destination.reference`), and dispatch sends them
 * in place of the points ({@link pointedCommand}).
 */

/**
 * The references the host finds at the act's points, on the page of the run's lease at the act's
 * revision (see `askLeaseHost`).
 * @throws UnansweredQuestion('invalid_arguments') for a point outside the picture or on nothing
 *   actionable; UnansweredQuestion('stale_revision') when the revision is no longer the page's
 *   latest or the run holds no page; UnansweredQuestion('host_unavailable').
 */
export async function resolvePoints(ports: Ports, run: Pick<RunRow, 'leaseId' | 'leaseHostUrl'>, args: ActArguments): Promise<ResolvedPoints> {
  const { point, to_point } = args as { point?: ViewportPoint; to_point?: ViewportPoint };
  const at = async (where: ViewportPoint) => (await askLeaseHost(ports, run, 'page.hit_test', { revision: args.revision, point: where })).reference;
  return {
    ...(point !== undefined ? { reference: await at(point) } : {}),
    ...(to_point !== undefined ? { to_reference: await at(to_point) } : {}),
  };
}

/**
 * The target of an act with the agent's `point` (when it named one), and with every iframe it
 * touches standing for the frame it holds: an act on an iframe element (by reference, or by a
 * point that landed there; its own element, a drag's destination or a fill_form's submit) sends
 * its input into the frame's document. An iframe whose document is of another origin, or whose
 * load the host blocked (withheld), touches that frame: its `frame_origin` is the frame's own
 * origin, so policy denies it outside the run's origins just as it denies a reference inside such
 * a frame (`hardline.frame_origin`). Inside the run's origins the frame's content is in the
 * observation, and the agent is asked to name the element there by its reference.
 * @throws UnansweredQuestion('invalid_arguments') for an iframe of a frame of the run's origins.
 */
export async function framedTarget(ports: Ports, run: RunRow, bound: ActTarget, args: ActArguments): Promise<ActTarget> {
  const { point } = args as { point?: ViewportPoint };
  const target: ActTarget = point === undefined ? bound : { ...bound, point };
  const framed = async <E extends ElementTarget>(element: E, what: string): Promise<E> => {
    if (element.role !== 'iframe') return element;
    const frame = await frameOf(ports, run, args.revision, element.reference);
    if (frame === undefined) return element;
    if (!frame.withheld && run.origins.includes(frame.origin)) {
      throw new UnansweredQuestion(
        'invalid_arguments',
        `${what} is the frame ${frame.reference} of ${frame.origin}; act on the element inside it by its reference`,
      );
    }
    return { ...element, frame_origin: frame.origin };
  };
  const own = await framed(target, point === undefined ? `reference: ${target.reference}` : `point: (${point.x}, ${point.y})`);
  return {
    ...own,
    ...(target.destination !== undefined ? { destination: await framed(target.destination, `to_reference: ${target.destination.reference}`) } : {}),
    ...(target.submit !== undefined ? { submit: await framed(target.submit, `submit_reference: ${target.submit.reference}`) } : {}),
  };
}

/** The frame summary of the iframe `reference` in the run's observations of `revision`, if any. */
async function frameOf(ports: Ports, run: RunRow, revision: number, reference: string): Promise<FrameSummary | undefined> {
  const marker = `[ref=${reference}]`;
  const rows = await ports.db
    .select({ result: toolCalls.result })
    .from(toolCalls)
    .where(and(eq(toolCalls.runId, run.id), isNotNull(toolCalls.result), sql`instr(${toolCalls.result}, ${marker}) > 0`))
    .orderBy(desc(toolCalls.updatedAt))
    .limit(MAX_RESULTS_SEARCHED);
  for (const row of rows) {
    const observation = Observation.safeParse(row.result);
    if (!observation.success || observation.data.revision !== revision) continue;
    const frame = observation.data.frames?.find((candidate) => candidate.reference === reference);
    if (frame !== undefined) return frame;
  }
  return undefined;
}

/**
 * The command dispatch sends for an act: `command` as the tool made it, except that an act naming
 * a point carries the references its points were resolved to (`target.reference` and
 * `target.destination.reference` of its phases) instead of the placeholder.
 * @throws Error when a pointed act has no resolved target (a bug: points are resolved before any decision).
 */
export function pointedCommand(command: ToolCommand, args: ActArguments, target: ActTarget | undefined): ToolCommand {
  if (command.method !== 'page.act' || !namesPoint(args)) return command;
  if (target === undefined) throw new Error(`act ${args.action}: its points were never resolved`);
  const resolved = { reference: target.reference, ...(target.destination !== undefined ? { to_reference: target.destination.reference } : {}) };
  return { method: 'page.act', params: { ...command.params, action: wireAction(args, resolved) } };
}
