import { conditionStatus } from '../../shared/predicate-evaluation.ts';
import type { ToolCallRow } from '../db/schema.ts';
import { type ActOutcome, type DriveContext, DriveStop } from './drive-context.ts';
import { freshRead } from './fresh-read.ts';
import { eventsOf } from './progress.ts';
import { describeAction, describePredicate } from './wording.ts';

/**
 * Judges a step's act by its stored call (ADR-0164 part 5): satisfied proves the step; a parked
 * call waits; a call the host never carried out is tried once more from a fresh read; anything
 * else returns to observation, and only evidence moves the run on. A write is never sent again.
 * @throws DriveStop('ended') for a cancelled call, or from an end of the run.
 */
export async function judge(drive: DriveContext, index: number, call: ToolCallRow): Promise<ActOutcome> {
  const step = drive.stepOf(index);
  const status = (call.phases as { postcondition?: { status?: string } }).postcondition?.status;
  const sent = call.state === 'succeeded' || call.state === 'uncertain' || call.state === 'dispatching';
  await drive.load();
  const wall = call.state === 'succeeded' && drive.run.state === 'waiting_for_authentication';
  const already = (await eventsOf(drive.ports, drive.runId)).some((event) => event.toolCallId === call.id && event.kind === 'call');
  if (!already && call.state !== 'waiting_for_approval') {
    await drive.event(
      index,
      'call',
      `Step ${index + 1}: ${describeAction(step)} → ${call.state}${wall ? ', answered by a sign-in wall' : status ? ` (postcondition ${status})` : ''}.`,
      {
        toolCallId: call.id,
        evidence: { tool: call.tool, state: call.state, postcondition: status ?? null, code: call.errorCode, sent, ...(wall ? { sign_in_wall: true } : {}) },
      },
    );
  }
  switch (call.state) {
    case 'waiting_for_approval':
      if (!(await eventsOf(drive.ports, drive.runId)).some((event) => event.toolCallId === call.id && event.kind === 'waiting_for_approval')) {
        await drive.event(index, 'waiting_for_approval', `Step ${index + 1} waits for the owner's approval, as policy asks.`, { toolCallId: call.id });
      }
      return 'parked';
    case 'dispatching':
      return 'later';
    case 'cancelled':
      throw new DriveStop('ended');
    case 'denied':
    case 'rejected':
      await drive.save({ pendingCallId: null });
      await drive.end('partial', `step ${index + 1} ("${step.title}") was not carried out: ${call.errorMessage ?? call.state}`);
      return 'ended';
    case 'failed': {
      // The host guarantees a failed write was not carried out: one more try from a fresh read.
      await drive.save({ pendingCallId: null });
      if (drive.run.state === 'waiting_for_authentication') return parkedForSignIn(drive, index, call);
      if (drive.progress.returned) {
        await drive.end('partial', `step ${index + 1} ("${step.title}") failed twice without being carried out (${call.errorCode})`);
        return 'ended';
      }
      await drive.save({ returned: true });
      await drive.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation: the act was not carried out (${call.errorCode}).`, {
        toolCallId: call.id,
      });
      return 'again';
    }
    case 'succeeded':
      if (drive.run.state === 'waiting_for_authentication') {
        await drive.save({ pendingCallId: null });
        return parkedForSignIn(drive, index, call);
      }
      if (status === 'satisfied') {
        await drive.event(index, 'step_done', `Step ${index + 1} is done: ${describePredicate(step.postcondition.success)} (postcondition satisfied).`, {
          toolCallId: call.id,
          evidence: { postcondition: status },
        });
        await drive.stepDone(index);
        return 'done';
      }
      return returnToObservation(drive, index, call, status === 'failure_observed' ? 'partial' : 'uncertain');
    case 'uncertain':
      return returnToObservation(drive, index, call, 'uncertain');
  }
}

/** An act a sign-in wall answered: the run waits for the owner and resumes from this step. */
async function parkedForSignIn(drive: DriveContext, index: number, call: ToolCallRow): Promise<ActOutcome> {
  await drive.event(
    index,
    'waiting_for_sign_in',
    `Step ${index + 1}: the page asks for sign-in; the run waits for the owner and resumes from step ${index + 1}.`,
    {
      toolCallId: call.id,
    },
  );
  return 'parked';
}

/**
 * After an unproven or uncertain act: one fresh read. Evidence that the step took effect moves
 * the run on; without it the run ends (`uncertain`: the write may have happened; `partial`: the
 * page showed the step's failure). The act is never sent again.
 */
async function returnToObservation(drive: DriveContext, index: number, call: ToolCallRow, otherwise: 'uncertain' | 'partial'): Promise<ActOutcome> {
  await drive.save({ pendingCallId: null });
  await drive.event(index, 'returned_to_observation', `Step ${index + 1} returns to observation: the act's outcome is not proven; it is never sent again.`, {
    toolCallId: call.id,
  });
  const read = await freshRead(drive, index);
  if ('stop' in read) {
    if (read.stop === 'later') {
      // Nothing could be read now: the step stays unproven; the next drive reads again.
      await drive.save({ pendingCallId: call.id });
    }
    return read.stop;
  }
  if (await drive.provenBy(index, read.observation, read.callId)) return 'done';
  const step = drive.stepOf(index);
  await drive.event(index, 'stopped', `Step ${index + 1}: no evidence that "${step.title}" took effect.`, {
    toolCallId: read.callId,
    evidence: { postcondition: conditionStatus(step.postcondition, read.observation), url: read.observation.url, revision: read.observation.revision },
  });
  await drive.end(
    otherwise,
    otherwise === 'uncertain'
      ? `step ${index + 1} ("${step.title}") was sent but its outcome is uncertain: the fresh read shows neither its postcondition nor the next step's expected state; it was not sent again`
      : `step ${index + 1} ("${step.title}"): the page showed the postcondition's failure`,
  );
  return 'ended';
}
