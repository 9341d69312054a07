import type { ElementTarget } from '../../shared/act-target.ts';
import { nodeOfSnapshotLine } from '../../shared/aria-snapshot.ts';
import { Observation } from '../../shared/observation.ts';
import { originOf } from '../../shared/origin.ts';

/** A stored observation (a first window or a continuation) of the act's revision. */
export type RevisionObservation = Observation;

/** One element as an observation showed it, with the page it was on and whether the host marked it `[inert]`. */
export interface ObservedElement {
  /** Reference, role, accessible name ('' when it has none) and the origin of the frame that holds it. */
  readonly element: Omit<ElementTarget, 'value'>;
  readonly inert: boolean;
  readonly page: { readonly url: string; readonly title: string };
}

/** The stored results that are observations of `revision`, in the order given. */
export function observationsOf(results: readonly unknown[], revision: number): RevisionObservation[] {
  return results.flatMap((result) => {
    const observation = Observation.safeParse(result);
    return observation.success && observation.data.revision === revision ? [observation.data] : [];
  });
}

/**
 * The element whose own `[ref=<reference>]` a snapshot line of `observation` carries (page text may
 * contain "[ref=e4]" too, so the line's node must be the one with that ref), or undefined. Its
 * frame origin is the origin of the iframe its reference prefix (`f1` of `f1e3`) names in the
 * observation's `frames`, else the page's: a prefix alone does not make a frame.
 */
export function elementIn(observation: RevisionObservation, reference: string): ObservedElement | undefined {
  const marker = `[ref=${reference}]`;
  if (!observation.snapshot.includes(marker)) return undefined;
  const node = observation.snapshot
    .split('\n')
    .filter((candidate) => candidate.includes(marker))
    .map(nodeOfSnapshotLine)
    .find((candidate) => candidate?.ref === reference);
  if (node === undefined) return undefined;
  const prefix = /^(f\d+)e\d+$/.exec(reference)?.[1];
  const frame = prefix === undefined ? undefined : observation.frames?.find((candidate) => candidate.prefix === prefix);
  return {
    element: { reference, role: node.role, name: node.name ?? '', frame_origin: frame?.origin ?? originOf(observation.url) ?? 'null' },
    inert: node.attributes.inert === 'true',
    page: { url: observation.url, title: observation.title },
  };
}
