import type { DecisionRecord } from '../../shared/api.ts';
import { originOf } from '../../shared/origin.ts';
import type { PolicyEffect, RuleCondition } from '../../shared/policy.ts';
import { sentActionKinds } from '../../shared/tool-arguments.ts';
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
   * Origins of the frames holding every element an act touches (its own, a drag's destination, a
   * fill_form's fields and submit button), as the observation showed them (the page's own for the
   * main frame), if known: what an act touches, and what origin rules and operator denies decide on.
   */
  readonly frameOrigins?: readonly string[] | undefined;
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
 * turn without it is denied); an act on a page, or touching any element inside a frame, outside
 * the run's origins is denied (`hardline.frame_origin`: a drag between frames needs both within the
 * run's origins); the profile's operator denies, matched on any origin the act touches (a deny
 * always wins); the profile's
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
  // Nor may any element it touches be inside a frame of another origin (its content was withheld
  // anyway): a drag stays within one frame or between frames of the run's origins.
  const foreignFrame = traits.actionKind === undefined ? undefined : input.frameOrigins?.find((origin) => !input.runOrigins.includes(origin));
  if (foreignFrame !== undefined) {
    const what = (input.frameOrigins?.length ?? 0) > 1 ? 'an element the act touches' : 'the target';
    return record('deny', 'hardline.frame_origin', `${what} is inside a frame of ${foreignFrame}, outside the run's origins`);
  }

  const targetOrigin = traits.targetUrl === undefined ? undefined : originOf(traits.targetUrl);
  const touched = touchedOrigins(input, targetOrigin, traits.targetUrl !== undefined);
  for (const deny of profile.body.denies) {
    if (deny.tool !== invocation.tool) continue;
    // A deny of an action kind also stops an act that sends that kind among others (a fill_form's typing).
    const sent = invocation.tool === 'browser.act' ? sentActionKinds(invocation.arguments) : [];
    if (deny.actions && !deny.actions.some((kind) => sent.includes(kind))) continue;
    // A deny of any origin an act touches denies the whole act (every field of a form fill).
    if (deny.origins && !touched.some((origin) => deny.origins?.includes(origin))) continue;
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

/**
 * The origins a call touches, for operator denies: a navigation's target; an act's every element's
 * frame (else, with no target bound, the page's).
 */
function touchedOrigins(input: DecisionInput, targetOrigin: string | undefined, navigates: boolean): readonly string[] {
  if (navigates) return targetOrigin === undefined ? [] : [targetOrigin];
  if (input.frameOrigins !== undefined && input.frameOrigins.length > 0) return input.frameOrigins;
  return input.pageOrigin === undefined ? [] : [input.pageOrigin];
}
