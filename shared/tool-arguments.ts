import { z } from 'zod';
import { Condition } from './predicate.ts';

/**
 * The arguments of the browser tools, as strict zod schemas (DESIGN.md section 3): unknown
 * fields, coercible strings ("100") and non-integers are rejected before anything runs. The
 * wire protocol (protocol.ts) sends the same action schema to the host; the tool registry
 * (tools.ts) binds these schemas to tool names and versions.
 */

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

/** `browser.observe` 1.1.0 arguments. */
export const ObserveArgumentsV1_1 = z.strictObject({
  continuation: ContinuationCursor.optional(),
});

/** `browser.observe` 1.2.0 arguments: `continuation` or `wait_for`, never both. */
export const ObserveArguments = z
  .strictObject({
    continuation: ContinuationCursor.optional(),
    wait_for: Condition.optional(),
  })
  .refine((args) => args.continuation === undefined || args.wait_for === undefined, {
    message: 'continuation and wait_for are mutually exclusive',
  });
export type ObserveArguments = z.infer<typeof ObserveArguments>;

const target = { revision: Revision, reference: ElementRef };

/** The fields of each action kind, shared by the wire action and the tool arguments. */
const ACTION_SHAPES = {
  click: { action: z.literal('click'), ...target },
  type: { action: z.literal('type'), ...target, text: z.string().max(MAX_TYPE_TEXT_LENGTH), submit: z.boolean().optional() },
  press: { action: z.literal('press'), ...target, key: z.string().regex(/^[A-Za-z0-9+]{1,64}$/, 'a key name such as Enter or Control+A') },
  select: { action: z.literal('select'), ...target, value: z.string().max(1000) },
  check: { action: z.literal('check'), ...target },
  uncheck: { action: z.literal('uncheck'), ...target },
  /** `delta` in CSS pixels, negative is up; the schema bound only rejects absurd input. */
  scroll: { action: z.literal('scroll'), ...target, delta: z.int().min(-100_000).max(100_000) },
} as const;

/** The kinds of `browser.act` action, the one list every schema (grants, policy denies) uses. */
export const ActionKind = z.enum(Object.keys(ACTION_SHAPES) as [keyof typeof ACTION_SHAPES, ...(keyof typeof ACTION_SHAPES)[]]);
export type ActionKind = z.infer<typeof ActionKind>;

/**
 * One browser action on a referenced element, exactly as the host receives it: the edge never
 * forwards a postcondition (ADR-0159: only the original single action goes to the provider).
 */
export const BrowserAction = z.discriminatedUnion('action', [
  z.strictObject(ACTION_SHAPES.click),
  z.strictObject(ACTION_SHAPES.type),
  z.strictObject(ACTION_SHAPES.press),
  z.strictObject(ACTION_SHAPES.select),
  z.strictObject(ACTION_SHAPES.check),
  z.strictObject(ACTION_SHAPES.uncheck),
  z.strictObject(ACTION_SHAPES.scroll),
]);
export type BrowserAction = z.infer<typeof BrowserAction>;

/** `browser.act` 1.1.0 arguments: the action alone. */
export const ActArgumentsV1_1 = BrowserAction;

const postcondition = { postcondition: Condition.optional() };

/** `browser.act` 1.2.0 arguments: the action plus an optional postcondition the edge evaluates. */
export const ActArguments = z.discriminatedUnion('action', [
  z.strictObject({ ...ACTION_SHAPES.click, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.type, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.press, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.select, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.check, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.uncheck, ...postcondition }),
  z.strictObject({ ...ACTION_SHAPES.scroll, ...postcondition }),
]);
export type ActArguments = z.infer<typeof ActArguments>;

/** The action of `browser.act` arguments without the postcondition: what the host is sent. */
export function wireAction(args: ActArguments): BrowserAction {
  const { postcondition: _omitted, ...action } = args;
  return action as BrowserAction;
}
