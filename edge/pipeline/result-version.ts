import type { Observation, ToolResult, ToolResultV1_1 } from '../../shared/observation.ts';
import { ToolVersion } from '../../shared/tools.ts';
import { projectObservation } from './projection.ts';

/**
 * A call's stored observation as the result its pinned tool version defines, within the result
 * size budget (DESIGN.md section 4, step 8).
 *
 * - 1.5.0 (and anything not older): the observation as stored, with `settle`, any `condition`,
 *   the confinement report (`blocked`, `dialogs`, `frames`), `incomplete`, and any `screenshot`
 *   and `downloads`, or the explicit omission marker when it does not fit (see `projectObservation`).
 * - 1.4.0: the same without the 1.5.0 additions (`screenshot`, `downloads`).
 * - 1.3.0: the same without the 1.4.0 addition (`incomplete`) either.
 * - 1.2.0: the same without the 1.3.0 additions (`blocked`, `dialogs`, `frames`) either.
 * - 1.1.0: shared/observation.ts `ObservationV1_1`, `{revision, url, title, window, snapshot}`:
 *   the 1.2.0 additions (`settle`, `condition`; ADR-0159) are dropped, so a pinned 1.1.0 client
 *   keeps receiving exactly the shape it was written for. The budget is applied to that shape,
 *   by the same rule: whole, or `{omitted, revision, size_bytes, budget_bytes}`, never clipped.
 *   A 1.1.0 call carries no condition to keep.
 *
 * The call's phases keep the settle report whatever the version: the record is the operator's,
 * the result is the agent's.
 * @param version the call's stored version (already validated when the call was proposed).
 * @param budgetBytes largest JSON result, in bytes.
 */
export function resultForVersion(version: string, observation: Observation, budgetBytes: number): ToolResult {
  const pinned = ToolVersion.safeParse(version).data;
  const { screenshot: _screenshot, downloads: _downloads, ...withoutV1_5 } = observation;
  if (pinned === '1.4.0') return projectObservation(withoutV1_5, budgetBytes);
  if (pinned === '1.3.0') {
    const { incomplete: _incomplete, ...shaped } = withoutV1_5;
    return projectObservation(shaped, budgetBytes);
  }
  if (pinned === '1.2.0') {
    const { blocked: _blocked, dialogs: _dialogs, frames: _frames, incomplete: _incomplete, ...shaped } = withoutV1_5;
    return projectObservation(shaped, budgetBytes);
  }
  if (pinned !== '1.1.0') return projectObservation(observation, budgetBytes);
  const { settle: _settle, condition: _condition, blocked: _b, dialogs: _d, frames: _f, incomplete: _i, ...shaped } = withoutV1_5;
  return fitV1_1(shaped, budgetBytes);
}

function fitV1_1(observation: Extract<ToolResultV1_1, { snapshot: string }>, budgetBytes: number): ToolResultV1_1 {
  const size = new TextEncoder().encode(JSON.stringify(observation)).byteLength;
  if (size <= budgetBytes) return observation;
  return { omitted: 'observation_over_budget', revision: observation.revision, size_bytes: size, budget_bytes: budgetBytes };
}
