import type { DecisionRecord } from '../../shared/api.ts';
import { originOf } from '../../shared/origin.ts';
import type { PolicyEffect, RuleCondition } from '../../shared/policy.ts';
import { callTraits, type ToolInvocation } from '../../shared/tools.ts';
import { conditionHolds } from './conditions.ts';

/**
 * Conditions under which an allow stands although the arguments carry page-derived references
 * (ADR-0168 for the scroll; the hover, issue 33, is shaped like it): the condition itself bounds
 * what the act can do, whatever element it is on.
 */
const PAGE_DERIVED_EXEMPT: ReadonlySet<RuleCondition | undefined> = new Set<RuleCondition>(['bounded_browser_scroll', 'bounded_browser_hover']);

import { hardlineDenial } from './hardline.ts';
import type { PolicyProfile } from './profile.ts';

/**
 * Where the proposing turn's authority comes from (DESIGN.md section 4, step 2): the newest user
 * message from the owner (`user`), or the owner's schedule (`trusted_configuration`); `null`
 * when the newest message is untrusted relayed content, which cannot borrow older authority.
 */
export type Authority = 'user' | 'trusted_configuration' | null;

/** Everything a decision depends on besides the profile. */
export interface DecisionInput {
  readonly invocation: ToolInvocation;
  /** The arguments exactly as proposed, before parsing. */
  readonly proposed: unknown;
  readonly runOrigins: readonly string[];
  /** Origin of the page an act would touch (the run's latest observed URL), if known. */
  readonly pageOrigin: string | undefined;
  /**
   * Origin of the frame holding an act's target, as the observation showed it (the page's own
   * for the main frame), if known: what an act touches, and what grants and origin rules decide on.
   */
  readonly frameOrigin?: string | undefined;
  readonly authority: Authority;
  /** The turn has received page-derived tool results. */
  readonly tainted: boolean;
  /** The arguments carry references derived from page content (refs, URLs read off a page). */
  readonly pageDerived: boolean;
}

/** The default effect per tool when no rule matched, and its rule id. */
const DEFAULTS: Record<ToolInvocation['tool'], { effect: PolicyEffect; reason: string }> = {
  'browser.observe': { effect: 'allow', reason: 'observing is allowed by default' },
  'browser.navigate': { effect: 'deny', reason: "the target is not one of the run's origins" },
  'browser.act': { effect: 'approval', reason: 'acting needs the owner unless a rule or grant covers it' },
};

/**
 * Decides one validated call (DESIGN.md section 5), in this order: hardline rules; authority (a
 * turn without it is denied); an act on a page, or on an element inside a frame, outside the run's
 * origins is denied; the profile's operator denies (a deny always wins); the profile's
 * rules, first match wins (exact tool, effect, optional condition); the tool's default; then the
 * external-untrusted overlay: page-derived arguments turn an allow into approval unless the
 * matching rule's condition is `bounded_browser_scroll` (ADR-0168) or `bounded_browser_hover` (issue 33).
 * @returns the effect, the deciding rule, a readable reason, and what it was decided under.
 */
export function decide(input: DecisionInput, profile: PolicyProfile): DecisionRecord {
  const { invocation } = input;
  const traits = callTraits(invocation);
  const base = { policy_hash: profile.hash, profile_version: profile.version, authority: input.authority ?? ('none' as const), tainted: input.tainted };
  const record = (effect: PolicyEffect, rule: string, reason: string, overlay?: 'external_untrusted'): DecisionRecord => ({
    effect,
    rule,
    reason,
    ...base,
    ...(overlay ? { overlay } : {}),
  });

  const hardline = hardlineDenial(invocation);
  if (hardline) return record('deny', hardline.rule, hardline.reason);

  if (input.authority === null) {
    return record('deny', 'authority.none', 'the newest message is untrusted relayed content; the owner must ask (or a schedule must start the run)');
  }

  // An act touches the page the browser is on, wherever a redirect or script took it: only pages
  // of the run's origins may be acted on.
  if (traits.actionKind !== undefined && input.pageOrigin !== undefined && !input.runOrigins.includes(input.pageOrigin)) {
    return record('deny', 'hardline.page_origin', `the page is at ${input.pageOrigin}, outside the run's origins`);
  }
  // Nor may an element inside a frame of another origin (its content was withheld anyway).
  if (traits.actionKind !== undefined && input.frameOrigin !== undefined && !input.runOrigins.includes(input.frameOrigin)) {
    return record('deny', 'hardline.frame_origin', `the target is inside a frame of ${input.frameOrigin}, outside the run's origins`);
  }

  const targetOrigin = traits.targetUrl === undefined ? undefined : originOf(traits.targetUrl);
  const touchedOrigin = traits.targetUrl === undefined ? (input.frameOrigin ?? input.pageOrigin) : targetOrigin;
  for (const deny of profile.body.denies) {
    if (deny.tool !== invocation.tool) continue;
    if (deny.actions && !(traits.actionKind !== undefined && deny.actions.includes(traits.actionKind))) continue;
    if (deny.origins && !(touchedOrigin !== undefined && deny.origins.includes(touchedOrigin))) continue;
    return record('deny', deny.id, `operator deny: ${deny.reason}`);
  }

  const conditionInput = {
    tool: invocation.tool,
    classification: traits.classification,
    proposed: input.proposed,
    targetOrigin,
    runOrigins: input.runOrigins,
  };
  let matched: { effect: PolicyEffect; rule: string; reason: string; condition?: RuleCondition } | undefined;
  for (const rule of profile.body.rules) {
    if (rule.tool !== invocation.tool) continue;
    if (rule.condition && !conditionHolds(rule.condition, conditionInput)) continue;
    matched = {
      effect: rule.effect,
      rule: rule.id,
      reason: `profile ${profile.name} v${profile.version} rule ${rule.id}${rule.condition ? ` (${rule.condition})` : ''}`,
      ...(rule.condition ? { condition: rule.condition } : {}),
    };
    break;
  }
  matched ??= { ...DEFAULTS[invocation.tool], rule: `default.${invocation.tool.slice('browser.'.length)}` };

  if (matched.effect === 'allow' && input.pageDerived && !PAGE_DERIVED_EXEMPT.has(matched.condition)) {
    return record('approval', matched.rule, `${matched.reason}; the arguments carry page-derived references, so the owner decides`, 'external_untrusted');
  }
  return record(matched.effect, matched.rule, matched.reason);
}
