import { describe, expect, it } from 'vitest';
import { projectObservation } from '../../edge/pipeline/projection.ts';
import type { Observation } from '../../shared/observation.ts';

// DESIGN.md section 4, step 8: a result fits its budget by being whole or omitted whole, with the
// condition result kept; it is never clipped into something that looks complete.

const observation: Observation = {
  revision: 7,
  url: 'http://127.0.0.1:9/orders',
  title: 'Orders',
  settle: { outcome: 'dom_quiet', elapsed_ms: 420, pending_at_entry: 1, overflow: false },
  window: { scope: { start_node: 0, end_node: 300, total_nodes: 300 }, truncated: false },
  snapshot: Array.from({ length: 300 }, (_, i) => `- row "Order ${i}" [ref=e${i + 1}]`).join('\n'),
  condition: { status: 'not_observed', observations: 9, elapsed_ms: 2012, window_scope: { start_node: 0, end_node: 300, total_nodes: 300 } },
};
const size = new TextEncoder().encode(JSON.stringify(observation)).byteLength;

describe('result projection', () => {
  it('returns the observation whole when it fits the budget', () => {
    expect(projectObservation(observation, size)).toBe(observation);
  });

  it('omits the whole observation when it does not fit, keeping the condition result whole', () => {
    expect(projectObservation(observation, size - 1)).toEqual({
      omitted: 'observation_over_budget',
      revision: 7,
      size_bytes: size,
      budget_bytes: size - 1,
      condition: observation.condition,
    });
  });

  it('never returns part of a snapshot, whatever the budget', () => {
    for (const budget of [0, 100, 1_000, 5_000, size - 1]) {
      const projected = projectObservation(observation, budget);
      expect('snapshot' in projected).toBe(false);
    }
  });
});
