import { z } from 'zod';
import { navigationHref } from './page-url.ts';
import type { Condition } from './predicate.ts';
import type { HostParams } from './protocol.ts';
import {
  ActArguments,
  ActArgumentsV1_1,
  ActArgumentsV1_4,
  type ActionKind,
  type HistoryMove,
  NavigateArguments,
  NavigateArgumentsV1_4,
  ObserveArguments,
  ObserveArgumentsV1_1,
  ObserveArgumentsV1_5,
  wireAction,
} from './tool-arguments.ts';

/**
 * The three browser tools as versioned contracts (DESIGN.md section 3), declared once each as
 * data in the spirit of Playwright MCP's `defineTool`: argument schemas per version, the
 * classification, the host command, the condition the edge evaluates, the page a sign-in wall
 * protects, and what of the arguments policy looks at. Adding a tool or a version touches this
 * file (and the edge's policy defaults, which the type system then asks for). Each version is
 * additive over the one before (1.2.0: settle report and conditions; 1.3.0: the observation's
 * `blocked`, `dialogs` and `frames`, with the same arguments as 1.2.0; 1.4.0: the observation's
 * `incomplete`, same arguments again; 1.5.0, issue 33: hover, drag, fill_form and upload acts,
 * points in place of references, history moves, an observation's screenshot and downloads), and a
 * call pinned to an older version keeps working unchanged.
 */
export const ToolName = z.enum(['browser.navigate', 'browser.observe', 'browser.act']);
export type ToolName = z.infer<typeof ToolName>;

export const ToolVersion = z.enum(['1.5.0', '1.4.0', '1.3.0', '1.2.0', '1.1.0']);
export type ToolVersion = z.infer<typeof ToolVersion>;

/** The newest version of every tool; what `GET /v1/health` reports first. */
export const CURRENT_TOOL_VERSION: ToolVersion = '1.5.0';

/**
 * How a tool touches the outside world. `external_write` calls are serial, write an effect
 * watermark before dispatch and are never retried (DESIGN.md section 4).
 */
export const ToolClassification = z.enum(['read', 'external_read', 'external_write']);
export type ToolClassification = z.infer<typeof ToolClassification>;

/** Params of a host page command without the lease and timeout the edge adds per dispatch. */
type CommandParams<M extends 'page.navigate' | 'page.observe' | 'page.act'> = Omit<HostParams<M>, 'lease_id' | 'timeout_ms'>;

/** The one host command that carries out a call (the wire method and its own params). */
export type ToolCommand =
  | {
      readonly method: 'page.navigate';
      /** A URL to load, or a history move; the edge adds the landing entry's `expected_url` (edge/pipeline/history.ts). */
      readonly params: { readonly url: string } | { readonly history: HistoryMove; readonly expected_url?: string };
    }
  | { readonly method: 'page.observe'; readonly params: CommandParams<'page.observe'> }
  | { readonly method: 'page.act'; readonly params: CommandParams<'page.act'> };

/**
 * Whether a call's arguments carry references read off the page (DESIGN.md section 2: such
 * calls get the external-untrusted overlay): `always` (an element reference), `when_seen` (a URL
 * that appeared in a page result of the turn) or `never`.
 */
export type PageReferences = 'always' | 'when_seen' | 'never';

/** One tool, declared once. `A` is its newest arguments type; older versions parse to a subset. */
export interface ToolDefinition<N extends ToolName, A> {
  readonly name: N;
  readonly classification: ToolClassification;
  /** The strict argument schema of every accepted version. */
  readonly arguments: Readonly<Record<ToolVersion, z.ZodType<A>>>;
  /** The host command for validated arguments; the edge adds lease and timeout. */
  command(args: A): ToolCommand;
  /** The condition the edge evaluates after the answer (an act's postcondition, an observe's `wait_for`). */
  condition(args: A): Condition | undefined;
  /**
   * The page a sign-in wall met on this call's answer protects, when the call itself names it
   * (ADR-0164 part 3): a navigation's target; undefined for reads and acts, whose protected page
   * the edge finds from the sign-in page and the host's evidence (edge/sign-in/protected-page.ts).
   */
  protectedUrl(args: A): string | undefined;
  /** The revision an act targets (acting on any but the latest fails `stale_revision`). */
  targetRevision(args: A): number | undefined;
  /** The URL a navigation loads (hardline rules, navigation origins, taint). */
  targetUrl(args: A): string | undefined;
  /**
   * The history move a navigation makes (1.5.0), whose landing URL the edge asks the host for
   * (`page.history`) and decides on as it would that URL's navigation.
   */
  historyMove(args: A): HistoryMove | undefined;
  /** The action kind of an act (grants and operator denies match on it). */
  actionKind(args: A): ActionKind | undefined;
  readonly pageReferences: PageReferences;
  /**
   * Whether the host's `invalid_params` for these arguments means the agent's own argument was
   * refused (a continuation cursor the host did not issue), so the agent is told `invalid_arguments`.
   */
  hostRefusesOwnArgument(args: A): boolean;
}

/** Declares a tool; the identity function, there for the type inference. */
function defineTool<N extends ToolName, A>(definition: ToolDefinition<N, A>): ToolDefinition<N, A> {
  return definition;
}

const none = () => undefined;

const navigate = defineTool({
  name: 'browser.navigate',
  classification: 'external_read',
  arguments: {
    '1.5.0': NavigateArguments,
    '1.4.0': NavigateArgumentsV1_4,
    '1.3.0': NavigateArgumentsV1_4,
    '1.2.0': NavigateArgumentsV1_4,
    '1.1.0': NavigateArgumentsV1_4,
  } as Record<ToolVersion, z.ZodType<NavigateArguments>>,
  // The URL as parsed (shared/page-url.ts): what policy decides on is exactly what the host loads.
  // A history move is sent with the URL the host reported for its landing entry (edge/pipeline/history.ts adds it).
  command: (args) =>
    'url' in args
      ? { method: 'page.navigate', params: { url: navigationHref(args.url) ?? args.url } }
      : { method: 'page.navigate', params: { history: args.history } },
  condition: none,
  protectedUrl: (args) => ('url' in args ? (navigationHref(args.url) ?? args.url) : undefined),
  targetRevision: none,
  targetUrl: (args) => ('url' in args ? (navigationHref(args.url) ?? args.url) : undefined),
  historyMove: (args) => ('history' in args ? args.history : undefined),
  actionKind: none,
  pageReferences: 'when_seen',
  hostRefusesOwnArgument: () => false,
});

const observe = defineTool({
  name: 'browser.observe',
  classification: 'read',
  arguments: {
    '1.5.0': ObserveArgumentsV1_5,
    '1.4.0': ObserveArguments,
    '1.3.0': ObserveArguments,
    '1.2.0': ObserveArguments,
    '1.1.0': ObserveArgumentsV1_1,
  } as Record<ToolVersion, z.ZodType<ObserveArgumentsV1_5>>,
  command: (args) => ({
    method: 'page.observe',
    params: { ...(args.continuation ? { continuation: args.continuation } : {}), ...(args.screenshot === true ? { screenshot: true } : {}) },
  }),
  condition: (args) => args.wait_for,
  protectedUrl: none,
  targetRevision: none,
  targetUrl: none,
  historyMove: none,
  actionKind: none,
  pageReferences: 'never',
  hostRefusesOwnArgument: (args) => args.continuation !== undefined,
});

const act = defineTool({
  name: 'browser.act',
  classification: 'external_write',
  arguments: {
    '1.5.0': ActArguments,
    '1.4.0': ActArgumentsV1_4,
    '1.3.0': ActArgumentsV1_4,
    '1.2.0': ActArgumentsV1_4,
    '1.1.0': ActArgumentsV1_1,
  } as Record<ToolVersion, z.ZodType<ActArguments>>,
  // Only the original single action goes to the host, never the postcondition (ADR-0159). An act
  // that names a point is sent with the reference the point was resolved to (edge/pipeline/points.ts
  // replaces this command's action before dispatch).
  command: (args) => ({ method: 'page.act', params: { action: wireActionOrPlaceholder(args) } }),
  condition: (args) => args.postcondition,
  protectedUrl: none,
  targetRevision: (args) => args.revision,
  targetUrl: none,
  historyMove: none,
  actionKind: (args) => args.action,
  pageReferences: 'always',
  hostRefusesOwnArgument: () => false,
});

/**
 * The wire action of act arguments; for an act that names a point, the point stands for itself
 * until the edge resolves it (`reference` is then `unresolved`, which the edge always replaces).
 */
function wireActionOrPlaceholder(args: ActArguments) {
  return wireAction(args, { reference: 'unresolved', to_reference: 'unresolved' });
}

/** The registry: every tool, declared once. */
export const TOOLS = { 'browser.navigate': navigate, 'browser.observe': observe, 'browser.act': act } as const;

/** A validated proposal: the tool, its pinned version and its parsed arguments. */
export type ToolInvocation = {
  [N in ToolName]: { tool: N; version: ToolVersion; arguments: (typeof TOOLS)[N] extends ToolDefinition<N, infer A> ? A : never };
}[ToolName];

/** The versions every tool accepts, newest first (what `GET /v1/health` reports). */
export function toolVersions(): Record<ToolName, ToolVersion[]> {
  return Object.fromEntries(ToolName.options.map((name) => [name, Object.keys(TOOLS[name].arguments) as ToolVersion[]])) as Record<ToolName, ToolVersion[]>;
}

/**
 * Parses a proposal's arguments with the schema of `tool` at `version`.
 * @returns the typed invocation, or the zod error of the rejected arguments.
 */
export function parseInvocation(
  tool: ToolName,
  version: ToolVersion,
  args: unknown,
): { readonly success: true; readonly invocation: ToolInvocation } | { readonly success: false; readonly error: z.ZodError } {
  const parsed = TOOLS[tool].arguments[version].safeParse(args);
  if (!parsed.success) return { success: false, error: parsed.error };
  // The schema is the one registered for `tool`, so its output is that tool's arguments.
  return { success: true, invocation: { tool, version, arguments: parsed.data } as ToolInvocation };
}

/** The definition of an invocation's tool, typed for its arguments. */
function definitionOf<I extends ToolInvocation>(invocation: I): ToolDefinition<I['tool'], I['arguments']> {
  return TOOLS[invocation.tool] as unknown as ToolDefinition<I['tool'], I['arguments']>;
}

/** What the edge needs to know about one validated call, read off its tool's definition. */
export interface CallTraits {
  readonly classification: ToolClassification;
  /** `external_write`: serial, effect watermark before dispatch, never retried. */
  readonly isWrite: boolean;
  readonly command: ToolCommand;
  readonly condition: Condition | undefined;
  readonly targetRevision: number | undefined;
  readonly targetUrl: string | undefined;
  /** See {@link ToolDefinition.historyMove}. */
  readonly historyMove: HistoryMove | undefined;
  readonly actionKind: ActionKind | undefined;
  readonly pageReferences: PageReferences;
  readonly hostRefusesOwnArgument: boolean;
  /** See {@link ToolDefinition.protectedUrl}. */
  readonly protectedUrl: string | undefined;
}

/** The traits of a validated call (see {@link CallTraits}). */
export function callTraits(invocation: ToolInvocation): CallTraits {
  const definition = definitionOf(invocation);
  const args = invocation.arguments;
  return {
    classification: definition.classification,
    isWrite: definition.classification === 'external_write',
    command: definition.command(args),
    condition: definition.condition(args),
    targetRevision: definition.targetRevision(args),
    targetUrl: definition.targetUrl(args),
    historyMove: definition.historyMove(args),
    actionKind: definition.actionKind(args),
    pageReferences: definition.pageReferences,
    hostRefusesOwnArgument: definition.hostRefusesOwnArgument(args),
    protectedUrl: definition.protectedUrl(args),
  };
}

/** Whether a stored call (tool and version as recorded, possibly not a real tool) is an external write. */
export function isExternalWrite(tool: string, version: string): boolean {
  const name = ToolName.safeParse(tool);
  return name.success && ToolVersion.safeParse(version).success && TOOLS[name.data].classification === 'external_write';
}
