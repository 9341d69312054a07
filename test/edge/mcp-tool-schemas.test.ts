import { type Schema, Validator } from '@cfworker/json-schema';
import draft07 from 'ajv/dist/refs/json-schema-draft-07.json';
import { describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../../shared/mcp-tools.ts';
import { TOOLS } from '../../shared/tools.ts';

// The MCP tools' input schemas (shared/mcp-tools.ts), generated from the 1.5.0 zod contracts:
// valid draft-07, one flat object each (MCP clients and model tool APIs refuse a top-level union),
// and accepting every 1.5.0 argument form the pipeline accepts. Validated by the JSON Schema
// validator the MCP SDK uses on Workers (@cfworker/json-schema) against the draft-07 meta-schema.

const schemaOf = (name: string) => {
  const tool = MCP_TOOLS.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no MCP tool ${name}`);
  return tool.inputSchema;
};
/** A tool's flat input schema, typed for reading its properties. */
type FlatSchema = { properties: Record<string, Record<string, unknown>>; required: string[] };
const flatSchemaOf = (name: string) => schemaOf(name) as unknown as FlatSchema;
const accepts = (name: string, args: unknown) => new Validator(schemaOf(name) as Schema, '7', false).validate(args).valid;

describe('MCP tool input schemas', () => {
  it.each(MCP_TOOLS.map((tool) => [tool.name, tool] as const))('%s is a valid draft-07 schema of one flat object', (_name, tool) => {
    const meta = new Validator(draft07 as Schema, '7', false).validate(tool.inputSchema);
    expect(meta.errors).toEqual([]);
    expect(tool.inputSchema.type).toBe('object');
    expect(tool.inputSchema).not.toHaveProperty('oneOf');
    expect(tool.inputSchema).not.toHaveProperty('anyOf');
    expect(tool.inputSchema.additionalProperties).toBe(false);
  });

  it('browser_act names every 1.5.0 argument and requires only run_id, action and revision (reference or point, fields for a form)', () => {
    const act = flatSchemaOf('browser_act');
    expect(act.required).toEqual(['run_id', 'action', 'revision']);
    expect(act.properties.action?.enum).toEqual(['click', 'type', 'press', 'select', 'check', 'uncheck', 'scroll', 'hover', 'drag', 'fill_form', 'upload']);
    expect(Object.keys(act.properties).sort()).toEqual(
      [
        'action',
        'delta',
        'fields',
        'file_id',
        'key',
        'point',
        'postcondition',
        'reference',
        'revision',
        'run_id',
        'submit',
        'submit_key',
        'submit_reference',
        'text',
        'to_point',
        'to_reference',
        'value',
      ].sort(),
    );
    expect(act.properties.point).toMatchObject({ type: 'object', required: ['x', 'y'], additionalProperties: false });
    expect(act.properties.to_point).toEqual(act.properties.point);
    expect(act.properties.fields).toMatchObject({ type: 'array', minItems: 1, maxItems: 32, items: { type: 'object', required: ['reference', 'value'] } });
  });

  it('browser_act accepts each 1.5.0 kind as the pipeline does, and refuses unknown fields', () => {
    const run_id = 'run_1';
    for (const args of [
      { action: 'hover', revision: 4, reference: 'e3' },
      { action: 'click', revision: 4, point: { x: 120, y: 40.5 } },
      { action: 'drag', revision: 4, reference: 'e3', to_point: { x: 10, y: 300 } },
      {
        action: 'fill_form',
        revision: 4,
        fields: [
          { reference: 'e5', value: 'Ada' },
          { reference: 'e6', value: true },
        ],
        submit_key: 'Enter',
      },
      { action: 'upload', revision: 4, reference: 'e9', file_id: 'file_abcdefgh12' },
      { action: 'click', revision: 4, reference: 'e2', postcondition: { success: { kind: 'control', role: 'tab', name: 'Billing', selected: true } } },
    ]) {
      expect(accepts('browser_act', { run_id, ...args })).toBe(true);
      expect(TOOLS['browser.act'].arguments['1.5.0'].safeParse(args).success).toBe(true);
    }
    expect(accepts('browser_act', { run_id, action: 'click', revision: 4, selector: '#x' })).toBe(false);
    expect(accepts('browser_act', { run_id, action: 'teleport', revision: 4, reference: 'e1' })).toBe(false);
    expect(accepts('browser_act', { run_id, action: 'click', revision: 4, point: { x: 1 } })).toBe(false);
  });

  it('browser_navigate is one object taking url or history, and browser_observe takes screenshot', () => {
    const navigate = flatSchemaOf('browser_navigate');
    expect(navigate.required).toEqual(['run_id']);
    expect(navigate.properties.history).toEqual({ type: 'string', enum: ['back', 'forward', 'reload'] });
    expect(accepts('browser_navigate', { run_id: 'run_1', url: 'http://127.0.0.1:8123/' })).toBe(true);
    expect(accepts('browser_navigate', { run_id: 'run_1', history: 'back' })).toBe(true);
    expect(accepts('browser_navigate', { run_id: 'run_1', history: 'sideways' })).toBe(false);
    expect(accepts('browser_observe', { run_id: 'run_1', screenshot: true })).toBe(true);
    expect(accepts('browser_observe', { run_id: 'run_1', screenshot: 'yes' })).toBe(false);
  });

  it('the descriptions name every act kind and its arguments, history moves and the screenshot', () => {
    const description = (name: string) => MCP_TOOLS.find((tool) => tool.name === name)?.description ?? '';
    for (const word of ['hover', 'drag', 'to_reference', 'to_point', 'fill_form', 'fields', 'submit_reference', 'submit_key', 'upload', 'file_id', 'point']) {
      expect(description('browser_act')).toContain(word);
    }
    for (const word of ['back', 'forward', 'reload']) expect(description('browser_navigate')).toContain(word);
    expect(description('browser_observe')).toContain('screenshot');
    expect(description('browser_observe')).toContain('image content block');
  });
});
