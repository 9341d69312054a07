import type { RuleCondition } from '../../shared/policy.ts';
import type { ToolClassification, ToolName } from '../../shared/tools.ts';

/** Largest scroll the bounded condition allows, in px (ADR-0168). */
export const MAX_BOUNDED_SCROLL_PX = 2_000;

const SCROLL_FIELDS = new Set(['action', 'revision', 'reference', 'delta', 'postcondition']);

/**
 * The `bounded_browser_scroll` condition (ADR-0168): true only for `browser.act` classified as an
 * external write, with action `scroll`, an integer `delta` (a JSON number, not a string or a
 * boolean) with 1 <= |delta| <= 2,000 px, and no fields besides revision, reference, delta and an
 * optional postcondition. It reads the arguments as proposed, so it holds even if a schema were
 * ever loosened. It never covers clicks, typing, keys, selection or anything else.
 */
export function boundedBrowserScroll(tool: ToolName, classification: ToolClassification, proposed: unknown): boolean {
  if (tool !== 'browser.act' || classification !== 'external_write') return false;
  if (proposed === null || typeof proposed !== 'object' || Array.isArray(proposed)) return false;
  const args = proposed as Record<string, unknown>;
  if (Object.keys(args).some((key) => !SCROLL_FIELDS.has(key))) return false;
  if (args.action !== 'scroll') return false;
  const delta = args.delta;
  if (typeof delta !== 'number' || !Number.isInteger(delta)) return false;
  const size = Math.abs(delta);
  return size >= 1 && size <= MAX_BOUNDED_SCROLL_PX;
}

const HOVER_FIELDS = new Set(['action', 'revision', 'reference', 'point', 'postcondition']);

/**
 * The `bounded_browser_hover` condition (issue 33, shaped like `bounded_browser_scroll`): true
 * only for `browser.act` classified as an external write, with action `hover`, exactly one of a
 * string `reference` and an object `point`, and no fields besides revision, that target and an
 * optional postcondition. It reads the arguments as proposed. It never covers clicks, drags,
 * typing or anything else that sends more than the pointer's position.
 */
export function boundedBrowserHover(tool: ToolName, classification: ToolClassification, proposed: unknown): boolean {
  if (tool !== 'browser.act' || classification !== 'external_write') return false;
  if (proposed === null || typeof proposed !== 'object' || Array.isArray(proposed)) return false;
  const args = proposed as Record<string, unknown>;
  if (Object.keys(args).some((key) => !HOVER_FIELDS.has(key))) return false;
  if (args.action !== 'hover') return false;
  const byReference = typeof args.reference === 'string';
  const byPoint = args.point !== null && typeof args.point === 'object' && !Array.isArray(args.point);
  return byReference !== byPoint && (args.reference === undefined || byReference) && (args.point === undefined || byPoint);
}

/** What a condition needs to know about the call. */
export interface ConditionInput {
  readonly tool: ToolName;
  readonly classification: ToolClassification;
  readonly proposed: unknown;
  /** Origin of a navigation's target, when the call navigates. */
  readonly targetOrigin: string | undefined;
  readonly runOrigins: readonly string[];
}

/** Whether a rule's named condition holds for the call. */
export function conditionHolds(condition: RuleCondition, input: ConditionInput): boolean {
  switch (condition) {
    case 'run_origin':
      return input.targetOrigin !== undefined && input.runOrigins.includes(input.targetOrigin);
    case 'bounded_browser_scroll':
      return boundedBrowserScroll(input.tool, input.classification, input.proposed);
    case 'bounded_browser_hover':
      return boundedBrowserHover(input.tool, input.classification, input.proposed);
  }
}
