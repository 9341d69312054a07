import { z } from 'zod';

/**
 * The three browser tools as versioned contracts (DESIGN.md section 3). Every schema is strict:
 * unknown fields, coercible strings ("100") and non-integers are rejected before anything runs.
 * Version 1.2.0 is additive over 1.1.0, and a call pinned to 1.1.0 keeps working unchanged.
 */
export const ToolName = z.enum(['browser.navigate', 'browser.observe', 'browser.act']);
export type ToolName = z.infer<typeof ToolName>;

export const ToolVersion = z.enum(['1.2.0', '1.1.0']);
export type ToolVersion = z.infer<typeof ToolVersion>;

/** The newest version of every tool; what `GET /v1/health` reports first. */
export const CURRENT_TOOL_VERSION: ToolVersion = '1.2.0';

/**
 * How a tool touches the outside world. `external_write` calls are serial, write an effect
 * watermark before dispatch and are never retried (DESIGN.md section 4).
 */
export const ToolClassification = z.enum(['read', 'external_read', 'external_write']);
export type ToolClassification = z.infer<typeof ToolClassification>;

/** Longest URL a navigation accepts, in characters. */
export const MAX_URL_LENGTH = 2048;
/** Longest text a `type` action accepts, in characters. */
export const MAX_TYPE_TEXT_LENGTH = 10_000;

/**
 * An element reference from an aria snapshot, e.g. `e12` or `f1e3` (frame 1, element 3).
 * It is meaningful only with the revision of the observation that produced it.
 */
export const ElementRef = z.string().regex(/^[a-z0-9]{1,32}$/, 'an aria snapshot ref such as e12 or f1e3');

/** The page revision an action targets; acting on any other than the latest fails `stale_revision`. */
export const Revision = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

export const NavigateArguments = z.strictObject({
  url: z.string().min(1).max(MAX_URL_LENGTH),
});
export type NavigateArguments = z.infer<typeof NavigateArguments>;

/** An opaque cursor from `window.continuation` of an earlier observation of the same revision. */
export const ContinuationCursor = z.string().min(1).max(512);

export const ObserveArguments = z.strictObject({
  continuation: ContinuationCursor.optional(),
});
export type ObserveArguments = z.infer<typeof ObserveArguments>;

const target = { revision: Revision, reference: ElementRef };

/**
 * One browser action on a referenced element. `scroll.delta` is in CSS pixels, negative is up;
 * its schema bound (100,000 px) only rejects absurd input, the policy bound is much smaller.
 */
export const BrowserAction = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('click'), ...target }),
  z.strictObject({
    action: z.literal('type'),
    ...target,
    text: z.string().max(MAX_TYPE_TEXT_LENGTH),
    submit: z.boolean().optional(),
  }),
  z.strictObject({ action: z.literal('press'), ...target, key: z.string().regex(/^[A-Za-z0-9+]{1,64}$/, 'a key name such as Enter or Control+A') }),
  z.strictObject({ action: z.literal('select'), ...target, value: z.string().max(1000) }),
  z.strictObject({ action: z.literal('check'), ...target }),
  z.strictObject({ action: z.literal('uncheck'), ...target }),
  z.strictObject({ action: z.literal('scroll'), ...target, delta: z.int().min(-100_000).max(100_000) }),
]);
export type BrowserAction = z.infer<typeof BrowserAction>;
export type BrowserActionKind = BrowserAction['action'];

export const ActArguments = BrowserAction;
export type ActArguments = z.infer<typeof ActArguments>;

/** A tool's contract at one version: its argument schema and its classification. */
export interface ToolContract {
  readonly arguments: z.ZodType;
  readonly classification: ToolClassification;
}

/**
 * The registry: every tool at every accepted version. Look-ups go through {@link toolContract}.
 */
export const TOOL_CONTRACTS: Record<ToolName, Record<ToolVersion, ToolContract>> = {
  'browser.navigate': {
    '1.2.0': { arguments: NavigateArguments, classification: 'external_read' },
    '1.1.0': { arguments: NavigateArguments, classification: 'external_read' },
  },
  'browser.observe': {
    '1.2.0': { arguments: ObserveArguments, classification: 'read' },
    '1.1.0': { arguments: ObserveArguments, classification: 'read' },
  },
  'browser.act': {
    '1.2.0': { arguments: ActArguments, classification: 'external_write' },
    '1.1.0': { arguments: ActArguments, classification: 'external_write' },
  },
};

/** The contract of `tool` at `version`. Both are already validated enums, so this never misses. */
export function toolContract(tool: ToolName, version: ToolVersion): ToolContract {
  return TOOL_CONTRACTS[tool][version];
}

/** A validated proposal: the tool, its pinned version and its parsed arguments. */
export type ToolInvocation =
  | { tool: 'browser.navigate'; version: ToolVersion; arguments: NavigateArguments }
  | { tool: 'browser.observe'; version: ToolVersion; arguments: ObserveArguments }
  | { tool: 'browser.act'; version: ToolVersion; arguments: ActArguments };
