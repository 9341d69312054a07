import { describe, expect, it } from 'vitest';
import { callSummary } from '../../../edge/pipeline/views.ts';

// What the owner's timeline says of an act that was never bound to a target (refused before any
// decision): the elements it named, never a point it did not name.

describe('callSummary of an act without a bound target', () => {
  const act = (args: Record<string, unknown>) => callSummary({ tool: 'browser.act', version: '1.5.0', arguments: { revision: 1, ...args }, phases: {} });

  it('names the fields of a fill_form', () => {
    expect(
      act({
        action: 'fill_form',
        fields: [
          { reference: 'e2', value: 'Ada' },
          { reference: 'e99', value: true },
        ],
        submit_reference: 'e7',
      }),
    ).toBe('fill_form of e2, e99 then e7');
  });

  it('names both elements of a drag, and a point as a point', () => {
    expect(act({ action: 'drag', reference: 'e9', to_reference: 'e10' })).toBe('drag on e9 to e10');
    expect(act({ action: 'drag', point: { x: 3, y: 4 }, to_reference: 'e10' })).toBe('drag on a point to e10');
    expect(act({ action: 'click', reference: 'e2' })).toBe('click on e2');
  });
});
