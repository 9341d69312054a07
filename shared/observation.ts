import { z } from 'zod';
import { ConditionStatus } from './predicate.ts';
import { ObservationScreenshot, ObservedDownload } from './run-files.ts';

/**
 * How the host's settling ended (ADR-0159). `dom_quiet`: the document was ready and 300 ms passed
 * without DOM mutation inside the 2,000 ms budget. `bound_expired`: the budget ran out (or the
 * request snapshot overflowed) first. `not_waited`: a plain observe, which never claims stability.
 * None of them means a task completed.
 */
export const SettleOutcome = z.enum(['dom_quiet', 'bound_expired', 'not_waited']);
export type SettleOutcome = z.infer<typeof SettleOutcome>;

/**
 * Settling metadata: outcome, elapsed time in ms since settling entry, the number of tracked
 * requests pending at entry, whether the snapshot overflowed its cap, and why a bound expired.
 */
export const SettleReport = z.strictObject({
  outcome: SettleOutcome,
  elapsed_ms: z.int().min(0),
  pending_at_entry: z.int().min(0),
  overflow: z.boolean(),
  expired_by: z.enum(['deadline', 'overflow']).optional(),
});
export type SettleReport = z.infer<typeof SettleReport>;

/**
 * Which part of the revision's aria snapshot this observation carries, in snapshot lines (one
 * line is one node): `[start_node, end_node)` of `total_nodes`.
 */
export const WindowScope = z.strictObject({
  start_node: z.int().min(0),
  end_node: z.int().min(0),
  total_nodes: z.int().min(0),
});
export type WindowScope = z.infer<typeof WindowScope>;

/** The bounded window of an observation; `continuation` reads the next part of the same revision. */
export const ObservationWindow = z.strictObject({
  scope: WindowScope,
  truncated: z.boolean(),
  continuation: z.string().max(512).optional(),
});
export type ObservationWindow = z.infer<typeof ObservationWindow>;

/**
 * What the edge reports about a postcondition or `wait_for` (DESIGN.md section 7): the status,
 * how many observations it evaluated (at most 21), the elapsed ms from the initial observation,
 * and the window scope of the deciding observation. It never says more than was visible.
 */
export const ConditionResult = z.strictObject({
  status: ConditionStatus,
  observations: z.int().min(1).max(21),
  elapsed_ms: z.int().min(0),
  window_scope: WindowScope,
});
export type ConditionResult = z.infer<typeof ConditionResult>;

/** Longest dialog message an observation carries, in characters (the rest is cut). */
export const MAX_DIALOG_MESSAGE_LENGTH = 300;

/**
 * What kind of request the host's egress confinement stopped (README "Confinement"):
 * `navigation` (the main frame), `frame` (an iframe's document), `popup` (a window the page
 * opened), `form` (a form submission to another origin) and `subresource` (a script, image,
 * fetch, WebSocket or other request to a forbidden address).
 */
export const BlockedKind = z.enum(['navigation', 'frame', 'popup', 'form', 'subresource']);
export type BlockedKind = z.infer<typeof BlockedKind>;

/**
 * One request the host blocked before any byte left: the origin it was for (never a path or a
 * query string), what kind of request it was, why, and when (ISO 8601).
 */
export const BlockedRequest = z.strictObject({
  origin: z.string().max(300),
  kind: BlockedKind,
  reason: z.enum(['outside_run_origins', 'forbidden_address', 'operator_denied', 'popup_refused', 'outside_sign_in_origins']),
  at: z.string().max(40),
});
export type BlockedRequest = z.infer<typeof BlockedRequest>;

/**
 * One JavaScript dialog the page raised and how the host answered it (README "Confinement"):
 * `alert` accepted, `confirm` and `prompt` dismissed, `beforeunload` accepted only when the host
 * itself leaves the page (a navigation the agent asked for, a sign-in page shown), dismissed when the
 * page started the navigation; `page_closed` when a dialog loop made the host close the page.
 * `message` is cut to 300 characters.
 */
export const PageDialog = z.strictObject({
  type: z.enum(['alert', 'confirm', 'prompt', 'beforeunload']),
  message: z.string().max(MAX_DIALOG_MESSAGE_LENGTH),
  answer: z.enum(['accepted', 'dismissed', 'page_closed']),
  at: z.string().max(40),
});
export type PageDialog = z.infer<typeof PageDialog>;

/**
 * One iframe of the page: the `[ref=...]` of the iframe element, the prefix of the references
 * inside it (`f1` for `f1e3`), its document's origin (`null` when it has none, e.g. a blocked
 * load) and whether its content was withheld from the snapshot because that origin is not one
 * of the run's.
 */
export const FrameSummary = z.strictObject({
  reference: z.string().max(32),
  prefix: z.string().max(32).optional(),
  origin: z.string().max(300),
  withheld: z.boolean(),
});
export type FrameSummary = z.infer<typeof FrameSummary>;

/**
 * Why an observation may hold less than a person sees (1.4.0): `closed_shadow_root`, the page has
 * closed shadow roots the host could not open (declarative ones, `<template
 * shadowrootmode="closed">`), whose content is not in the snapshot.
 */
export const IncompleteReason = z.enum(['closed_shadow_root']);
export type IncompleteReason = z.infer<typeof IncompleteReason>;

/**
 * What the host saw: the page revision the snapshot's `[ref=...]` markers belong to, the URL and
 * title, settling metadata and a bounded window of Playwright's AI-mode aria snapshot.
 */
export const Observation = z.strictObject({
  revision: z.int().min(0),
  url: z.string(),
  title: z.string(),
  settle: SettleReport,
  window: ObservationWindow,
  snapshot: z.string(),
  /** Added by the edge when the call carried a postcondition or `wait_for` (1.2.0). */
  condition: ConditionResult.optional(),
  /** Requests blocked since the previous observation of this lease, oldest first (1.3.0). */
  blocked: z.array(BlockedRequest).max(64).optional(),
  /** Dialogs the page raised since the previous observation of this lease, oldest first (1.3.0). */
  dialogs: z.array(PageDialog).max(32).optional(),
  /** The page's iframes with their origins, in snapshot order (1.3.0). */
  frames: z.array(FrameSummary).max(128).optional(),
  /** Why the snapshot may hold less than a person sees; absent when nothing is known missing (1.4.0). */
  incomplete: z.array(IncompleteReason).max(8).optional(),
  /** The viewport screenshot of this revision, when the observe asked for one (1.5.0); page content, tainted like text. */
  screenshot: ObservationScreenshot.optional(),
  /** Files the page downloaded since the previous observation of this lease, oldest first (1.5.0). */
  downloads: z.array(ObservedDownload).max(32).optional(),
});
export type Observation = z.infer<typeof Observation>;

/** The 1.5.0 additions to an observation, which a call pinned to 1.4.0 or older never receives. */
export const V1_5_OBSERVATION_FIELDS = ['screenshot', 'downloads'] as const;

/** The 1.3.0 additions to an observation: what the page tried and what frames it holds. */
export const CONFINEMENT_FIELDS = ['blocked', 'dialogs', 'frames'] as const;

/**
 * An observation left out of a result because it did not fit the result size budget. The
 * condition, when there was one, is kept whole; the observation is never clipped.
 */
export const OmittedObservation = z.strictObject({
  omitted: z.literal('observation_over_budget'),
  revision: z.int().min(0),
  size_bytes: z.int().min(0),
  budget_bytes: z.int().min(0),
  condition: ConditionResult.optional(),
});
export type OmittedObservation = z.infer<typeof OmittedObservation>;

/**
 * An observation in the 1.1.0 result shape: `{revision, url, title, window, snapshot}`.
 * Version 1.2.0 is additive over 1.1.0 (ADR-0159): the settle report and `condition` are the
 * 1.2.0 additions, so a call pinned to 1.1.0 is answered without them (its settling is still
 * recorded in the call's phases). Strict, like every other contract: a 1.1.0 client never
 * receives a field it does not know.
 */
export const ObservationV1_1 = Observation.omit({
  settle: true,
  condition: true,
  blocked: true,
  dialogs: true,
  frames: true,
  incomplete: true,
  screenshot: true,
  downloads: true,
});
export type ObservationV1_1 = z.infer<typeof ObservationV1_1>;

/** {@link OmittedObservation} in the 1.1.0 result shape: without `condition`, a 1.2.0 addition. */
export const OmittedObservationV1_1 = OmittedObservation.omit({ condition: true });
export type OmittedObservationV1_1 = z.infer<typeof OmittedObservationV1_1>;

/** What a call pinned to 1.1.0 returns as its result: an observation, or the explicit marker. */
export const ToolResultV1_1 = z.union([ObservationV1_1, OmittedObservationV1_1]);
export type ToolResultV1_1 = z.infer<typeof ToolResultV1_1>;

/**
 * An observation in the 1.2.0 result shape: without the 1.3.0 additions (`blocked`, `dialogs`,
 * `frames`), which a call pinned to 1.2.0 never receives (the host still reports them; they are
 * kept in the call's stored result and phases).
 */
export const ObservationV1_2 = Observation.omit({ blocked: true, dialogs: true, frames: true, incomplete: true, screenshot: true, downloads: true });
export type ObservationV1_2 = z.infer<typeof ObservationV1_2>;

/** What a call pinned to 1.2.0 returns as its result: an observation, or the explicit marker. */
export const ToolResultV1_2 = z.union([ObservationV1_2, OmittedObservation]);
export type ToolResultV1_2 = z.infer<typeof ToolResultV1_2>;

/** An observation in the 1.3.0 result shape: without `incomplete`, the 1.4.0 addition. */
export const ObservationV1_3 = Observation.omit({ incomplete: true, screenshot: true, downloads: true });
export type ObservationV1_3 = z.infer<typeof ObservationV1_3>;

/** What a call pinned to 1.3.0 returns as its result: an observation, or the explicit marker. */
export const ToolResultV1_3 = z.union([ObservationV1_3, OmittedObservation]);
export type ToolResultV1_3 = z.infer<typeof ToolResultV1_3>;

/** An observation in the 1.4.0 result shape: without the 1.5.0 additions (`screenshot`, `downloads`). */
export const ObservationV1_4 = Observation.omit({ screenshot: true, downloads: true });
export type ObservationV1_4 = z.infer<typeof ObservationV1_4>;

/** What a call pinned to 1.4.0 returns as its result: an observation, or the explicit marker. */
export const ToolResultV1_4 = z.union([ObservationV1_4, OmittedObservation]);
export type ToolResultV1_4 = z.infer<typeof ToolResultV1_4>;

/** What a call pinned to 1.5.0 returns as its result: an observation, or the explicit marker. */
export const ToolResultV1_5 = z.union([Observation, OmittedObservation]);
export type ToolResultV1_5 = z.infer<typeof ToolResultV1_5>;

/**
 * A call's result at whichever version it was pinned to. The 1.2.0 shapes come first: a 1.1.0
 * observation lacks `settle`, so it never parses as a 1.2.0 one, and vice versa (all strict).
 */
export const ToolResult = z.union([Observation, OmittedObservation, ObservationV1_1, OmittedObservationV1_1]);
// (A 1.2.0 or 1.3.0 result is a 1.4.0 observation without the optional later fields: `Observation` parses it.)
export type ToolResult = z.infer<typeof ToolResult>;
