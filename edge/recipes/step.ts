import { and, desc, eq, gte } from 'drizzle-orm';
import { type AriaNode, parseAriaSnapshot, walkReachable } from '../../shared/aria-snapshot.ts';
import type { Observation } from '../../shared/observation.ts';
import { readPredicate } from '../../shared/predicate-evaluation.ts';
import { MAX_RECIPE_CALLS, MAX_RECIPE_STEPS, type RecipeStep, type RecipeTarget, type RecipeValue } from '../../shared/recipes.ts';
import { CURRENT_TOOL_VERSION } from '../../shared/tools.ts';
import { type ToolCallRow, toolCalls } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import { enterProposal } from '../pipeline/agent-entry.ts';
import { readToolCall } from '../pipeline/read-call.ts';
import { type ActOutcome, type DriveContext, type DriveOutcome, DriveStop } from './drive-context.ts';
import { freshRead } from './fresh-read.ts';
import { judge } from './judge.ts';
import { eventsOf } from './progress.ts';
import { refusalOutcome } from './refusals.ts';
import { describePredicate } from './wording.ts';

/**
 * One execution of step `index` from a fresh read (ADR-0164 part 5): evidence that an earlier
 * act of the step took effect comes first; then the expected state must be visible, the target
 * is selected by role and exact name (exactly one, else back to observation once), and acted on.
 * @returns undefined when the drive goes on (the step is done, or to be executed again), else why it stops.
 */
export async function executeStep(drive: DriveContext, index: number): Promise<DriveOutcome | undefined> {
  const step = drive.stepOf(index);
  let read = await freshRead(drive, index);
  if ('stop' in read) return read.stop;
  let selected: { reference: string; observation: Observation } | undefined;
  const acted = await actsOf(drive, index);
  for (let attempt = 0; selected === undefined; attempt++) {
    // This step acted before (a resumption, a lost answer): evidence that it took effect comes first.
    if (acted.sent && (await drive.provenBy(index, read.observation, read.callId))) return undefined;
    if (acted.unproven !== undefined) {
      // A write whose outcome is unknown is never sent again: only evidence could move the run on.
      await drive.event(index, 'stopped', `Step ${index + 1}: no evidence that its earlier act took effect; it is never sent again.`, {
        toolCallId: read.callId,
        evidence: { unproven_call: acted.unproven, url: read.observation.url, revision: read.observation.revision },
      });
      return drive.end(
        'uncertain',
        `step ${index + 1} ("${step.title}") was sent (${acted.unproven}) but its outcome is uncertain: the fresh read shows neither its postcondition nor the next step's expected state; it was not sent again`,
      );
    }
    const expected = readPredicate(step.expect, read.observation);
    // Several candidates for the expected state are ambiguous evidence: like an ambiguous target, back to observation.
    if (!expected.matched && expected.candidates <= 1) {
      await drive.event(index, 'stopped', `The expected state of step ${index + 1} is not on the page: ${describePredicate(step.expect)}.`, {
        toolCallId: read.callId,
        evidence: { expect: step.expect, candidates: expected.candidates, url: read.observation.url, revision: read.observation.revision },
      });
      return drive.end('partial', `step ${index + 1} ("${step.title}") found the page not in its expected state (${describePredicate(step.expect)})`);
    }
    const candidates = expected.matched ? targetsOf(read.observation, step.target) : [];
    if (expected.matched) {
      await drive.event(index, 'expected_state_visible', `Step ${index + 1}: ${describePredicate(step.expect)} is on the page.`, {
        toolCallId: read.callId,
        evidence: { expect: step.expect, candidates: expected.candidates, url: read.observation.url, revision: read.observation.revision },
      });
    }
    if (candidates.length === 1) {
      selected = { reference: candidates[0]!, observation: read.observation };
      await drive.event(
        index,
        'target_selected',
        `Step ${index + 1}: the ${step.target.role} "${step.target.name}" is ${candidates[0]} of revision ${read.observation.revision}.`,
        { toolCallId: read.callId, evidence: { target: step.target, reference: candidates[0], revision: read.observation.revision, candidates: 1 } },
      );
      break;
    }
    const ambiguity = expected.matched
      ? `${candidates.length} elements are the ${step.target.role} "${step.target.name}"`
      : `${expected.candidates} elements are ${describePredicate(step.expect)}`;
    await drive.event(index, 'target_ambiguous', `Step ${index + 1}: ${ambiguity}; returning to observation.`, {
      toolCallId: read.callId,
      evidence: { target: step.target, candidates: candidates.length, expect_candidates: expected.candidates, revision: read.observation.revision },
    });
    if (attempt >= 1)
      return drive.end('partial', `step ${index + 1} ("${step.title}") could not tell which ${step.target.role} "${step.target.name}" to use (${ambiguity})`);
    read = await freshRead(drive, index);
    if ('stop' in read) return read.stop;
  }
  // A step execution is an act begun: reads that found nothing to act on (a host away) are bounded by the 64 calls.
  if (drive.progress.stepsBegun >= MAX_RECIPE_STEPS) {
    return drive.end('partial', `the recipe's limit of ${MAX_RECIPE_STEPS} step executions was reached before step ${index + 1} could be executed`);
  }
  await drive.save({ stepsBegun: drive.progress.stepsBegun + 1 });
  const outcome = await act(drive, index, step, selected.reference, selected.observation.revision);
  return outcome === 'done' || outcome === 'again' ? undefined : outcome;
}

/**
 * The call of the current step whose outcome no drive saw (approved later, or left by a dead
 * driver between its mark and its proposal), judged now; one abandoned mid-dispatch is settled
 * as the pipeline settles it (uncertain for a write).
 * @returns undefined when the drive goes on, else why it stops.
 */
export async function settlePending(drive: DriveContext): Promise<DriveOutcome | undefined> {
  const index = drive.progress.nextStep;
  let callId = drive.progress.pendingCallId;
  if (callId === null && drive.progress.actSince !== null) {
    const marked = await drive.ports.db
      .select({ id: toolCalls.id })
      .from(toolCalls)
      .where(
        and(
          eq(toolCalls.runId, drive.runId),
          eq(toolCalls.principalId, drive.principal().id),
          eq(toolCalls.tool, 'browser.act'),
          gte(toolCalls.createdAt, drive.progress.actSince),
        ),
      )
      .orderBy(desc(toolCalls.createdAt))
      .limit(1)
      .get();
    if (marked === undefined) {
      // The proposal stored nothing: nothing was dispatched, the step begins again.
      await drive.save({ actSince: null });
      return undefined;
    }
    await drive.save({ pendingCallId: marked.id, actSince: null });
    callId = marked.id;
  }
  const call = callId === null ? undefined : await callOf(drive, callId);
  if (call === undefined) {
    await drive.save({ pendingCallId: null, actSince: null });
    return undefined;
  }
  // Being dispatched in another request (an approval), whose kick comes back here.
  if (call.state === 'dispatching') return 'later';
  const outcome = await judge(drive, index, call);
  return outcome === 'done' || outcome === 'again' ? undefined : outcome;
}

/** The call `callId` as the pipeline reads it (lost dispatches settled on the way), or undefined when it is gone. */
async function callOf(drive: DriveContext, callId: string): Promise<ToolCallRow | undefined> {
  try {
    return (await readToolCall(drive.ports, drive.principal(), callId, 0)).call;
  } catch (error) {
    if (error instanceof DomainError && error.code === 'not_found') return undefined;
    throw error;
  }
}

/**
 * The acts step `index` already sent in this run: whether any was, and the last one, whose
 * effect may have happened. Sent and not proven is never sent again, whatever answered it: a
 * sign-in wall after a submit can follow a write the site accepted as well as one it refused,
 * so after the sign-in only evidence moves the step on (ADR-0164: no duplicate effects after
 * resumption).
 */
async function actsOf(drive: DriveContext, index: number): Promise<{ sent: boolean; unproven: string | undefined }> {
  const sent = (await eventsOf(drive.ports, drive.runId)).filter(
    (event) =>
      event.step === index && event.kind === 'call' && event.toolCallId !== null && event.evidence.tool === 'browser.act' && event.evidence.sent === true,
  );
  return { sent: sent.length > 0, unproven: sent.at(-1)?.toolCallId ?? undefined };
}

/** Proposes step `index`'s act on `reference` of `revision` through the agent entry, then judges its call. */
async function act(drive: DriveContext, index: number, step: RecipeStep, reference: string, revision: number): Promise<ActOutcome> {
  const value = (source: RecipeValue) => ('text' in source ? source.text : (drive.fields[source.field] ?? ''));
  const action = step.action;
  const target = { reference, revision, postcondition: step.postcondition };
  const args: Record<string, unknown> =
    action.kind === 'type'
      ? { action: 'type', ...target, text: value(action.value), ...(action.submit !== undefined ? { submit: action.submit } : {}) }
      : action.kind === 'select'
        ? { action: 'select', ...target, value: value(action.value) }
        : action.kind === 'press'
          ? { action: 'press', ...target, key: action.key }
          : action.kind === 'scroll'
            ? { action: 'scroll', ...target, delta: action.delta }
            : { action: action.kind, ...target };
  if (drive.progress.calls >= MAX_RECIPE_CALLS) return drive.end('partial', `the recipe's limit of ${MAX_RECIPE_CALLS} calls was reached at step ${index + 1}`);
  // Counted, and marked, before the proposal: a driver that dies in between leaves the mark, and
  // the next one looks for this act's call instead of acting again.
  await drive.save({ calls: drive.progress.calls + 1, actSince: drive.ports.clock.now() });
  let call: ToolCallRow;
  try {
    call = (await enterProposal(drive.ports, drive.principal(), drive.runId, { tool: 'browser.act', version: CURRENT_TOOL_VERSION, arguments: args })).call;
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    // Refused before anything was stored as dispatched: nothing was sent.
    await drive.save({ actSince: null });
    return actRefused(drive, index, error);
  }
  await drive.save({ pendingCallId: call.id, actSince: null });
  return judge(drive, index, call);
}

/** An act the pipeline refused before dispatch, by the refusal table: a stale page or an inert target returns to observation once. */
async function actRefused(drive: DriveContext, index: number, error: DomainError): Promise<ActOutcome> {
  await drive.event(index, 'call', `The act of step ${index + 1} was refused before dispatch: ${error.code}: ${error.message}`, {
    evidence: { code: error.code, tool: 'browser.act', sent: false },
  });
  const outcome = refusalOutcome(error, 'act');
  switch (outcome) {
    case 'observe_again':
      if (drive.progress.returned) return drive.end('partial', `step ${index + 1}: the act was refused twice (${error.code}); nothing was sent`);
      await drive.save({ returned: true });
      await drive.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation (nothing was sent).`);
      return 'again';
    case 'ended':
    case 'later':
      throw new DriveStop(outcome);
    case 'partial':
      return drive.end('partial', `step ${index + 1}: policy denies its act (${error.message})`);
    case 'uncertain':
      return drive.end('uncertain', `step ${index + 1}: ${error.message}`);
    case 'failed':
      return drive.end('failed', `step ${index + 1}: ${error.code}: ${error.message}`);
  }
}

/** The references of the reachable elements of `observation` with the target's role and exact name. */
export function targetsOf(observation: Pick<Observation, 'snapshot'>, target: RecipeTarget): string[] {
  const nodes: AriaNode[] = parseAriaSnapshot(observation.snapshot);
  const found: string[] = [];
  for (const node of walkReachable(nodes)) {
    if (node.role === target.role && node.name === target.name && node.ref !== undefined) found.push(node.ref);
  }
  return found;
}
