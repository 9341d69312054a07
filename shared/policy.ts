import { z } from 'zod';
import { Origin } from './origin.ts';
import { ActionKind } from './tool-arguments.ts';
import { ToolName } from './tools.ts';

/**
 * Policy profiles (DESIGN.md section 5): versioned lists of rules managed by the operator, stored
 * with the SHA-256 of their canonical JSON. Evaluation order is fixed: hardline rules (in code,
 * not overridable), then the profile's operator denies, then its rules in order, then overlays.
 */

export const PolicyEffect = z.enum(['allow', 'approval', 'deny']);
export type PolicyEffect = z.infer<typeof PolicyEffect>;

/**
 * Named conditions a rule may carry. `run_origin`: a navigation to one of the run's origins.
 * `bounded_browser_scroll` (ADR-0168): a `browser.act` scroll of an integer 1-2,000 px with only
 * revision, reference, delta and an optional postcondition. `bounded_browser_hover` (issue 33, shaped
 * like it): a `browser.act` hover with only revision, a reference or a point, and an optional
 * postcondition.
 */
export const RuleCondition = z.enum(['run_origin', 'bounded_browser_scroll', 'bounded_browser_hover']);
export type RuleCondition = z.infer<typeof RuleCondition>;

const RuleId = z.string().regex(/^[a-z0-9_.-]{1,64}$/, 'lower-case letters, digits, _ . -');

/** A profile rule: an exact tool, an effect and an optional condition. */
export const PolicyRule = z.strictObject({
  id: RuleId,
  tool: ToolName,
  effect: PolicyEffect,
  condition: RuleCondition.optional(),
});
export type PolicyRule = z.infer<typeof PolicyRule>;

/**
 * An operator deny: it always wins over any allow. It matches a tool, optionally only some action
 * kinds of `browser.act`, and optionally only some origins (of the navigation target, or of the
 * page an act would touch).
 */
export const OperatorDeny = z.strictObject({
  id: RuleId,
  tool: ToolName,
  actions: z.array(ActionKind).min(1).max(ActionKind.options.length).optional(),
  origins: z.array(Origin).min(1).max(64).optional(),
  reason: z.string().min(1).max(500),
});
export type OperatorDeny = z.infer<typeof OperatorDeny>;

/** A profile's content; its hash is the SHA-256 of the canonical JSON of this object. */
export const PolicyProfileBody = z
  .strictObject({
    rules: z.array(PolicyRule).max(64),
    denies: z.array(OperatorDeny).max(64),
  })
  .meta({
    examples: [
      {
        rules: [
          { id: 'observe.allow', tool: 'browser.observe', effect: 'allow' },
          { id: 'navigate.run_origins', tool: 'browser.navigate', effect: 'allow', condition: 'run_origin' },
          { id: 'act.bounded_scroll', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_scroll' },
          { id: 'act.bounded_hover', tool: 'browser.act', effect: 'allow', condition: 'bounded_browser_hover' },
          { id: 'act.approval', tool: 'browser.act', effect: 'approval' },
        ],
        denies: [{ id: 'no-typing-on-bank', tool: 'browser.act', actions: ['type'], origins: ['https://bank.example'], reason: 'never type into the bank' }],
      },
    ],
  });
export type PolicyProfileBody = z.infer<typeof PolicyProfileBody>;

export const ProfileName = z
  .string()
  .regex(/^[a-z0-9_-]{1,64}$/, 'lower-case letters, digits, _ and -')
  .meta({ examples: ['default'] });

/** `POST /v1/policy-profiles/{name}`: publish the next version of a profile. */
export const PublishProfileBody = PolicyProfileBody;

export const PolicyProfileView = z.strictObject({
  name: ProfileName,
  version: z.int().min(1),
  hash: z.string(),
  rules: z.array(PolicyRule),
  denies: z.array(OperatorDeny),
  created_at: z.string(),
});
export type PolicyProfileView = z.infer<typeof PolicyProfileView>;
