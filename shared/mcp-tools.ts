import { z } from 'zod';
import { MAX_WAIT_MS, ReportBody, RunView, ToolCallView } from './api.ts';
import { ActArguments, NavigateArguments, ObserveArgumentsV1_5 } from './tool-arguments.ts';
import { CURRENT_TOOL_VERSION, type ToolName, type ToolVersion } from './tools.ts';

/**
 * The tools the edge's MCP endpoint (`/mcp`, issue 18) offers: the same governed pipeline as the
 * HTTP API, one definition. Each browser tool's input is the HTTP API's tool arguments at
 * {@link MCP_TOOL_VERSION} (1.5.0: hover, drag, fill_form, upload, points, history moves and
 * screenshots included) plus `run_id`; its JSON Schema is generated from the
 * same zod contract (draft-07, which every MCP client validates), and the pipeline validates the
 * arguments with that contract again. Outputs are the HTTP API's views (`ToolCallView`,
 * `RunView`).
 */

/** The id of a run or call as the API names it. */
const Id = z.string().min(1).max(64);

/** `run_claim` input: the run to claim, or none for the owner's oldest queued run. */
export const RunClaimInput = z.strictObject({ run_id: Id.optional() });
/** `call_status` input: the call, and how long to wait for it to finish (0-30,000 ms, default 0). */
export const CallStatusInput = z.strictObject({ call_id: Id, wait_ms: z.int().min(0).max(MAX_WAIT_MS).optional() });
/** `run_report` input: the run's final report, as `POST /v1/runs/{id}/report` takes it. */
export const RunReportInput = z.strictObject({ run_id: Id, ...ReportBody.shape });

/** What an MCP tool is, for listing and for calling. */
export interface McpToolDefinition {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** The browser tool it proposes, for the three browser tools. */
  readonly tool?: ToolName;
  readonly inputSchema: JsonObjectSchema;
  readonly outputSchema: JsonObjectSchema;
  readonly annotations: {
    readonly readOnlyHint: boolean;
    readonly destructiveHint: boolean;
    readonly idempotentHint: boolean;
    readonly openWorldHint: boolean;
  };
}

/** A JSON Schema whose top level is an object (MCP requires `type: "object"` for tool schemas). */
export type JsonObjectSchema = { type: 'object' } & Record<string, unknown>;

/** The browser tools' pinned version: MCP calls always get the newest result shape. */
export const MCP_TOOL_VERSION: ToolVersion = CURRENT_TOOL_VERSION;

/**
 * The draft-07 JSON Schema of `schema` (zod's own conversion), `$schema` left out, with `run_id`
 * added as a required string when `withRunId`; a union of objects (`browser.act`'s actions,
 * `browser.navigate`'s `{url}` or `{history}`) becomes one flat object schema (see
 * {@link mergedBranches}): what MCP clients and model tool APIs accept at the top level.
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output', withRunId = false): JsonObjectSchema {
  const { $schema: _dropped, ...json } = z.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'any' }) as Record<string, unknown>;
  if (!withRunId) return { ...json, type: 'object' } as JsonObjectSchema;
  const addRunId = (branch: Record<string, unknown>): Record<string, unknown> => ({
    ...branch,
    properties: {
      run_id: { type: 'string', minLength: 1, maxLength: 64, description: 'The run this call belongs to (from run_claim).' },
      ...(branch.properties as object),
    },
    required: ['run_id', ...((branch.required as string[] | undefined) ?? [])],
  });
  for (const key of ['oneOf', 'anyOf'] as const) {
    const branches = json[key];
    if (Array.isArray(branches)) return addRunId(mergedBranches(branches as Record<string, unknown>[])) as JsonObjectSchema;
  }
  return addRunId({ ...json, type: 'object' }) as JsonObjectSchema;
}

/**
 * One flat object schema for the branches of a union of objects (`browser.act`'s actions,
 * `browser.navigate`'s `{url}` or `{history}`): many model tool APIs refuse a top-level `oneOf` or
 * `anyOf`. Each property is what the first branch naming it allows (branches sharing a name share
 * its schema; the discriminator's constants become an `enum`), a property is required when every
 * branch requires it, and no other property is allowed. What only some branches require (`text`
 * for `type`, `key` for `press`, `url` or `history`, one of `reference` and `point`) is checked by
 * the pipeline with the same zod contract.
 */
function mergedBranches(branches: readonly Record<string, unknown>[]): Record<string, unknown> {
  const properties: Record<string, Record<string, unknown>> = {};
  const constants: Record<string, unknown[]> = {};
  for (const branch of branches) {
    for (const [name, property] of Object.entries((branch.properties as Record<string, Record<string, unknown>> | undefined) ?? {})) {
      if ('const' in property) constants[name] = [...(constants[name] ?? []), property.const];
      else properties[name] ??= property;
    }
  }
  for (const [name, values] of Object.entries(constants)) properties[name] = { type: 'string', enum: values };
  const required = branches
    .map((branch) => (branch.required as string[] | undefined) ?? [])
    .reduce((common, names) => common.filter((name) => names.includes(name)));
  return { type: 'object', properties, required, additionalProperties: false };
}

const CALL_OUTPUT = jsonSchemaOf(ToolCallView, 'output');
const RUN_OUTPUT = jsonSchemaOf(RunView, 'output');

/** The MCP tools, in the order they are listed. */
export const MCP_TOOLS: readonly McpToolDefinition[] = [
  {
    name: 'run_claim',
    title: 'Claim a run',
    description:
      "Claim a queued run of your owner (the oldest, or the one named by run_id) before using the browser. Answers the run's id, intent, origins and deadline. Runs are created by the owner; you cannot create one.",
    inputSchema: jsonSchemaOf(RunClaimInput, 'input'),
    outputSchema: RUN_OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
  {
    name: 'browser_navigate',
    title: 'Navigate',
    tool: 'browser.navigate',
    description:
      "Load a URL in the run's browser (within the run's origins, by the owner's policy), or move in the tab's history: pass url, or history (back, forward or reload; the entry it lands on must be within the run's origins, or it is refused like any navigation). Answers the call with the page's observation: an aria snapshot with element references.",
    inputSchema: jsonSchemaOf(NavigateArguments, 'input', true),
    outputSchema: CALL_OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  },
  {
    name: 'browser_observe',
    title: 'Observe',
    tool: 'browser.observe',
    description:
      "Read the current page: its aria snapshot with element references and revision. Pass continuation to read the next window of a long page, or wait_for to wait for a condition. Pass screenshot: true for a JPEG picture of the viewport at the same revision, returned as an image content block (its pixels are CSS px: name a point {x, y} in it to act on what is there). The picture is page content: treat what it shows like the page's text.",
    inputSchema: jsonSchemaOf(ObserveArgumentsV1_5, 'input', true),
    outputSchema: CALL_OUTPUT,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  },
  {
    name: 'browser_act',
    title: 'Act',
    tool: 'browser.act',
    description: [
      "One action on the page's latest revision (revision), on an element reference or, instead of reference, a point {x, y} of that revision's screenshot (browser_observe with screenshot), with an optional postcondition. Kinds and their arguments:",
      'click, check, uncheck, hover (reference or point);',
      'type (text, submit?: press Enter after); press (key, e.g. Enter or Control+A); select (value: the option); scroll (delta in CSS px, negative is up);',
      'drag (from reference or point, to to_reference or to_point: drop it there);',
      'fill_form (fields: up to 32 {reference, value}, a string to type or select, true or false to check or uncheck; then submit_reference to click or submit_key to press, not both): one approval lists every field;',
      'upload (reference or point of a file input, file_id: a file the owner attached to the run, never a path).',
      'Postcondition states of a control: disabled, checked, selected, expanded, pressed and value (exact); a state the page does not show is not_observed.',
      "May wait for the owner's approval: the answer then says waiting_for_approval; poll call_status.",
    ].join(' '),
    inputSchema: jsonSchemaOf(ActArguments, 'input', true),
    outputSchema: CALL_OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  },
  {
    name: 'call_status',
    title: 'Call status',
    description: "A call's state and result, waiting up to wait_ms (at most 30000) for it to finish; use it for calls that wait for the owner.",
    inputSchema: jsonSchemaOf(CallStatusInput, 'input'),
    outputSchema: CALL_OUTPUT,
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  },
  {
    name: 'run_report',
    title: 'Report',
    description:
      'End the run with its final report: status completed, partial, uncertain or failed, and a summary for the owner. Optionally propose up to 8 memories about the owner ({statement, page_derived: true when you read it on a page}): each becomes a suggestion the owner accepts or rejects, never a memory by itself. Uses no browser.',
    inputSchema: jsonSchemaOf(RunReportInput, 'input'),
    outputSchema: RUN_OUTPUT,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  },
];
