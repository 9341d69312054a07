import type { DecisionRecord, PolicyEffect } from '../../shared/api.ts';
import type { ToolInvocation, ToolName } from '../../shared/tools.ts';
import { canonicalHash } from './canonical-hash.ts';

/**
 * Policy for the first slice (DESIGN.md section 5, placeholder profile): hardline rules first
 * (navigation only to http(s) URLs), then the profile: observe allowed, navigate allowed to the
 * run's origins only, every act needs the owner's approval. Later work replaces the profile with
 * operator-managed versions; the decision shape and the hash binding stay.
 */

/** A rule of a policy profile: an exact tool, an effect and an optional named condition. */
export interface PolicyRule {
  readonly id: string;
  readonly tool: ToolName;
  readonly effect: PolicyEffect;
  readonly condition?: 'run_origin';
}

/** A versioned policy profile; its hash is the SHA-256 of its canonical JSON. */
export interface PolicyProfile {
  readonly name: string;
  readonly version: number;
  readonly rules: readonly PolicyRule[];
}

/** The profile every run uses until profiles are operator-managed. */
export const DEFAULT_POLICY_PROFILE: PolicyProfile = {
  name: 'default',
  version: 1,
  rules: [
    { id: 'observe.allow', tool: 'browser.observe', effect: 'allow' },
    { id: 'navigate.run_origins', tool: 'browser.navigate', effect: 'allow', condition: 'run_origin' },
    { id: 'act.approval', tool: 'browser.act', effect: 'approval' },
  ],
};

/** What the decision needs to know about the run. */
export interface PolicyContext {
  /** Allowed origins of the run, e.g. `http://127.0.0.1:8000`. */
  readonly origins: readonly string[];
}

/**
 * Decides one validated invocation: allow, approval or deny, with the deciding rule, a readable
 * reason and the profile hash the decision (and any approval) binds to.
 */
export async function decide(invocation: ToolInvocation, context: PolicyContext, profile = DEFAULT_POLICY_PROFILE): Promise<DecisionRecord> {
  const policyHash = await canonicalHash(profile);
  const decision = (effect: PolicyEffect, rule: string, reason: string): DecisionRecord => ({ effect, rule, reason, policy_hash: policyHash });

  const hardline = hardlineDenial(invocation);
  if (hardline) return decision('deny', hardline.rule, hardline.reason);

  for (const rule of profile.rules) {
    if (rule.tool !== invocation.tool) continue;
    if (rule.condition === 'run_origin') {
      if (invocation.tool !== 'browser.navigate') continue;
      const origin = new URL(invocation.arguments.url).origin;
      if (!context.origins.includes(origin)) {
        return decision('deny', rule.id, `origin ${origin} is not one of the run's allowed origins`);
      }
      return decision(rule.effect, rule.id, `origin ${origin} is allowed for this run`);
    }
    const verdict = { allow: 'allows', approval: "requires the owner's approval for", deny: 'denies' }[rule.effect];
    return decision(rule.effect, rule.id, `the policy profile ${verdict} ${invocation.tool}`);
  }
  return decision('approval', 'default.approval', 'no rule covers this call, so the owner decides');
}

/** Hardline rules: nothing overrides them. Returns the denial, or undefined when none applies. */
function hardlineDenial(invocation: ToolInvocation): { rule: string; reason: string } | undefined {
  if (invocation.tool !== 'browser.navigate') return undefined;
  let url: URL;
  try {
    url = new URL(invocation.arguments.url);
  } catch {
    return { rule: 'hardline.url', reason: 'the URL does not parse' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { rule: 'hardline.scheme', reason: `navigation to ${url.protocol} URLs is never allowed` };
  }
  if (url.username !== '' || url.password !== '') {
    return { rule: 'hardline.credentials', reason: 'URLs carrying credentials are never allowed' };
  }
  return undefined;
}
