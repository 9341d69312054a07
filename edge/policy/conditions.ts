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
  }
}
