import type { Observation, OmittedObservation } from '../../shared/observation.ts';

/**
 * Fits an observation into the result size budget (DESIGN.md section 4, step 8). It is returned
 * whole when its JSON fits in `budgetBytes`; otherwise the whole observation is replaced by an
 * explicit marker that keeps the revision and the condition result whole. It is never clipped:
 * a clipped snapshot could hide evidence or fake completion (ADR-0159).
 */
export function projectObservation(observation: Observation, budgetBytes: number): Observation | OmittedObservation {
  const size = new TextEncoder().encode(JSON.stringify(observation)).byteLength;
  if (size <= budgetBytes) return observation;
  return {
    omitted: 'observation_over_budget',
    revision: observation.revision,
    size_bytes: size,
    budget_bytes: budgetBytes,
    ...(observation.condition ? { condition: observation.condition } : {}),
  };
}
