import { describe, expect, it } from 'vitest';
import { parseInvocation, type ToolName, type ToolVersion } from '../../../shared/tools.ts';

// Tool versions are additive (DESIGN.md section 3): what 1.5.0 added (issue 33) is accepted at
// 1.5.0 and refused at 1.4.0, whose calls keep exactly their shape. Over HTTP the refusals are
// invalid_arguments with zod's message (test/edge/bad-input.test.ts, "pinned to 1.4.0").

const ADDED_IN_1_5: Array<[string, ToolName, unknown]> = [
  ['an act naming a point', 'browser.act', { action: 'click', revision: 3, point: { x: 120, y: 48.5 } }],
  ['a hover', 'browser.act', { action: 'hover', revision: 3, reference: 'e7' }],
  ['a drag to a point', 'browser.act', { action: 'drag', revision: 3, reference: 'e7', to_point: { x: 10, y: 10 } }],
  ['a fill_form', 'browser.act', { action: 'fill_form', revision: 3, fields: [{ reference: 'e7', value: 'Ada' }], submit_key: 'Enter' }],
  ['an upload', 'browser.act', { action: 'upload', revision: 3, reference: 'e7', file_id: 'file_abcdefgh12' }],
  ['a history move back', 'browser.navigate', { history: 'back' }],
  ['a reload', 'browser.navigate', { history: 'reload' }],
  ['an observe with a screenshot', 'browser.observe', { screenshot: true }],
  [
    'a postcondition on a selected tab',
    'browser.act',
    { action: 'click', revision: 3, reference: 'e7', postcondition: { success: { kind: 'control', role: 'tab', name: 'Billing', selected: true } } },
  ],
  ['a wait_for on a field value', 'browser.observe', { wait_for: { success: { kind: 'control', role: 'textbox', name: 'Day', value: '2026-12-15' } } }],
  ['a wait_for on an expanded header', 'browser.observe', { wait_for: { success: { kind: 'control', role: 'button', name: 'Shipping', expanded: true } } }],
  ['a wait_for on a pressed toggle', 'browser.observe', { wait_for: { success: { kind: 'control', role: 'button', name: 'Bold', pressed: true } } }],
];

describe('what 1.5.0 added', () => {
  it.each(ADDED_IN_1_5)('1.5.0 accepts %s', (_name, tool, args) => {
    expect(parseInvocation(tool, '1.5.0', args)).toMatchObject({ success: true, invocation: { tool, version: '1.5.0', arguments: args } });
  });

  it.each(ADDED_IN_1_5.flatMap(([name, tool, args]) => (['1.4.0', '1.3.0', '1.2.0'] as ToolVersion[]).map((version) => [name, version, tool, args] as const)))(
    'refuses %s when pinned to %s',
    (_name, version, tool, args) => {
      expect(parseInvocation(tool, version, args).success).toBe(false);
    },
  );

  it('1.4.0 still accepts its own shapes, disabled and checked control states included', () => {
    const postcondition = { success: { kind: 'control', role: 'checkbox', name: 'Express', checked: true, disabled: false } };
    expect(parseInvocation('browser.act', '1.4.0', { action: 'check', revision: 3, reference: 'e7', postcondition }).success).toBe(true);
    expect(parseInvocation('browser.navigate', '1.4.0', { url: 'http://127.0.0.1:8123/' }).success).toBe(true);
    expect(parseInvocation('browser.observe', '1.4.0', { wait_for: postcondition }).success).toBe(true);
  });
});
