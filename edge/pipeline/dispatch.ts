import type { ActTarget } from '../../shared/act-target.ts';
import type { CallPhases } from '../../shared/api.ts';
import { type HostObservation, splitSignIn } from '../../shared/authentication.ts';
import type { ErrorCode } from '../../shared/errors.ts';
import { withinOrigins } from '../../shared/origin.ts';
import type { Condition } from '../../shared/predicate.ts';
import { MAX_OPERATION_TIMEOUT_MS, type UploadFile } from '../../shared/protocol.ts';
import type { WireDownload } from '../../shared/run-files.ts';
import { callTraits, type ToolCommand, type ToolInvocation } from '../../shared/tools.ts';
import { keepScreenshot } from '../artifacts/screenshots.ts';
import type { RunRow, ToolCallRow } from '../db/schema.ts';
import { Deadline, HOST_ANSWER_MARGIN_MS } from '../deadline.ts';
import type { EarlyConnection } from '../fleet/early-connection.ts';
import { HostCallError, type HostSession } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';
import { awaitCondition, ConditionDeadlineExceeded } from '../postcondition/await-condition.ts';
import { parkForSignIn } from '../sign-in/park.ts';
import { protectedPageOf } from '../sign-in/protected-page.ts';
import { furtherElements } from './act-target.ts';
import { atSignInWall, BLANK_PAGE, classifyFailure, type DispatchOutcome, inAgentTerms, onBlankPage, withheld } from './dispatch-outcome.ts';
import { historyCommand } from './history.ts';
import { giveBackReservation, leaseForDispatch, sendOnLease } from './lease.ts';
import { withPageFiles } from './page-files.ts';
import { pointedCommand } from './points.ts';
import { recordOutcome } from './record-outcome.ts';
import { uploadFileFor } from './upload-target.ts';

/**
 * Sends exactly one command for a call that is already `dispatching` (and, for an external
 * write, whose effect watermark is already committed), then records how it ended in one batch.
 * Never retries. The tool deadline (config `toolDeadlineMs`, capped by the run deadline) bounds
 * everything; when it runs out after the watermark, the call ends `uncertain`, not retryable
 * (DESIGN.md section 4). Never throws for host trouble: it becomes the call's outcome. When an
 * act or navigation answered, the host's picture of the page it left is kept for the owner in
 * the background (issue 15), never delaying the answer. An upload carries the bytes of the run's
 * attached file it names; an observe's screenshot and the page's downloads are kept as run
 * artifacts and reported in the observation (issue 33, see `withPageFiles`). `early`: a session to
 * the run's lease host opened while the call was being recorded (fleet/early-connection.ts).
 * @returns the call row as stored afterwards.
 */
export async function dispatchCall(
  ports: Ports,
  reservedRun: RunRow,
  call: ToolCallRow,
  invocation: ToolInvocation,
  early?: EarlyConnection,
): Promise<ToolCallRow> {
  let run = reservedRun;
  const traits = callTraits(invocation);
  const { isWrite } = traits;
  const startedAt = ports.clock.now();
  const deadline = Deadline.at(ports.clock, Math.min(call.deadlineAt ?? startedAt + ports.config.toolDeadlineMs, run.deadlineAt));

  let outcome: DispatchOutcome;
  let session: HostSession | undefined;
  let sent = false;
  let leaseExpiry: DispatchOutcome['leaseExpiry'];
  // The page an act or navigation answered with: the host keeps a picture of it for the owner.
  let answered: { leaseId: string; revision: number; hostUrl: string } | undefined;
  // The host that served the call (issue 32: `phases.dispatch.host_id`), once connected.
  let hostId: string | undefined;
  // The page's downloads reported by the command's answer and by the condition's reads (issue 33).
  const downloaded: WireDownload[] = [];
  try {
    // An upload sets one of the run's attached files: read before anything is sent (issue 33).
    const file = await uploadFileFor(ports, run, traits.command);
    const connection = await leaseForDispatch(ports, run, isWrite, deadline, early);
    ({ session, run } = connection);
    hostId = connection.host.id;
    const timeout = Math.max(100, deadline.upTo(MAX_OPERATION_TIMEOUT_MS));
    sent = true;
    const phases = call.phases as CallPhases;
    const { target } = phases;
    const command = commandOf(invocation, traits.command, phases);
    const connected = session;
    // The command goes right behind a pipelined renewal (see ensureLease).
    const { lease, answer } = await sendOnLease(ports, connection, connection.lease, isWrite, deadline, (leaseId) =>
      sendCommand(connected, leaseId, command, timeout, target, file),
    );
    if (!lease.expiryRecorded) leaseExpiry = { leaseId: lease.lease_id, expiresAtMs: lease.expires_at_ms };
    const { observation, signIn, screenshot, downloads } = splitSignIn(answer);
    downloaded.push(...(downloads ?? []));
    if (traits.command.method !== 'page.observe') answered = { leaseId: lease.lease_id, revision: observation.revision, hostUrl: connection.host.url };
    outcome = {
      state: 'succeeded',
      observation,
      settle: observation.settle,
      error: null,
      retryable: false,
      dispatch: 'answered',
      leaseGeneration: lease.generation,
    };
    // An empty page (a fresh browser after a host restart, or a lease that started empty) shows
    // nothing of anyone's: it is not withheld, and a read of it says where to go instead.
    if (observation.url === BLANK_PAGE) outcome = isWrite ? outcome : onBlankPage(outcome, run.latestUrl);
    else if (!withinOrigins(observation.url, run.origins)) outcome = withheld(outcome, observation, isWrite);
    else if (signIn && withinOrigins(`${signIn.origin}/`, run.origins)) outcome = atSignInWall(outcome, signIn, isWrite);
    else if (traits.condition) outcome = await withCondition(ports, session, lease.lease_id, traits.condition, outcome, deadline, isWrite, downloaded);
    // What the page gave the run: kept as its artifacts, reported in the observation the agent gets.
    const reach = { session, leaseId: lease.lease_id, deadline };
    const picture = screenshot === undefined ? undefined : { wire: screenshot, revision: observation.revision };
    if (outcome.observation !== null) {
      outcome = { ...outcome, observation: await withPageFiles(ports, { run, toolCallId: call.id }, reach, outcome.observation, picture, downloaded) };
    }
  } catch (error) {
    outcome = classifyFailure(inAgentTerms(error, traits.hostRefusesOwnArgument), isWrite, sent);
    // No lease came of it (the host was unreachable, say): the reservation is given back.
    await giveBackReservation(ports, run.id);
  } finally {
    session?.close();
    // A session opened early that the dispatch did not take (it failed first, or went elsewhere).
    early?.discard();
  }
  const served = hostId === undefined ? outcome : { ...outcome, hostId };
  const recorded = await recordOutcome(ports, run, call, leaseExpiry ? { ...served, leaseExpiry } : served, startedAt, isWrite);
  if (answered !== undefined) {
    const picture = answered;
    ports.background(`the screenshot after call ${call.id}`, () =>
      keepScreenshot(ports, { ownerId: run.ownerId, runId: run.id, toolCallId: call.id, kind: 'after', ...picture }),
    );
  }
  if (outcome.signIn && outcome.observation) {
    const signInUrl = outcome.observation.url;
    const protectedUrl = await protectedPageOf(ports, run, {
      navigationTarget: traits.protectedUrl,
      signInUrl,
      signal: outcome.signIn,
      pageBefore: run.latestUrl,
    });
    await parkForSignIn(ports, run, { signal: outcome.signIn, signInUrl, protectedUrl, toolCallId: call.id });
  }
  return recorded;
}

/**
 * The host command of a call as decided: an act's points replaced by the references they were
 * resolved to (edge/pipeline/points.ts), a history move with the URL of the entry it was decided
 * on (edge/pipeline/history.ts).
 */
function commandOf(invocation: ToolInvocation, command: ToolCommand, phases: CallPhases): ToolCommand {
  if (invocation.tool === 'browser.act') return pointedCommand(command, invocation.arguments, phases.target);
  return historyCommand(command, phases.history);
}

/**
 * Sends the call's one host command with the lease and timeout (ms) of this dispatch, waiting
 * {@link HOST_ANSWER_MARGIN_MS} longer for the answer; an act carries the role, name and frame
 * its target must still have, and as `elements` those of every further element it touches (a
 * drag's destination, a fill_form's fields and submit button): `target_changed` otherwise, with
 * nothing typed.
 */
function sendCommand(
  session: HostSession,
  leaseId: string,
  command: ToolCommand,
  timeoutMs: number,
  target: ActTarget | undefined,
  file: UploadFile | undefined,
): Promise<HostObservation> {
  const wire = { lease_id: leaseId, timeout_ms: timeoutMs };
  const answerWithinMs = timeoutMs + HOST_ANSWER_MARGIN_MS;
  switch (command.method) {
    case 'page.navigate': {
      const params = command.params;
      if ('url' in params) return session.call(command.method, { ...wire, url: params.url }, answerWithinMs);
      // A history move lands only on the entry policy decided on (edge/pipeline/history.ts records its URL).
      if (params.expected_url === undefined) throw new Error('a history move is sent only with the URL it was decided on');
      return session.call(command.method, { ...wire, history: params.history, expected_url: params.expected_url }, answerWithinMs);
    }
    case 'page.observe':
      return session.call(command.method, { ...wire, ...command.params }, answerWithinMs);
    case 'page.act': {
      const further = target === undefined ? [] : furtherElements(target);
      const expected = target === undefined ? {} : { target: { role: target.role, name: target.name, frame_origin: target.frame_origin } };
      const elements = further.length === 0 ? {} : { elements: further };
      return session.call(command.method, { ...wire, ...command.params, ...expected, ...elements, ...(file === undefined ? {} : { file }) }, answerWithinMs);
    }
  }
}

/**
 * Evaluates the call's condition after its command answered, through ordinary reads on the same
 * session. For a write, losing the evidence or the deadline during the reads makes the call
 * `uncertain` and not retryable: the action was sent (ADR-0159). An unmet condition is not a
 * failure: the call succeeds with `not_observed`.
 */
async function withCondition(
  ports: Ports,
  session: HostSession,
  leaseId: string,
  condition: Condition,
  answered: DispatchOutcome,
  deadline: Deadline,
  isWrite: boolean,
  downloaded: WireDownload[],
): Promise<DispatchOutcome> {
  try {
    const { observation, report } = await awaitCondition(ports.clock, session, leaseId, condition, answered.observation!, deadline, downloaded);
    return { ...answered, observation: { ...observation, condition: report }, condition: report };
  } catch (error) {
    const deadline = error instanceof ConditionDeadlineExceeded;
    const code: ErrorCode = deadline ? 'deadline_exceeded' : error instanceof HostCallError ? error.code : 'outcome_unknown';
    const message = error instanceof Error ? error.message : String(error);
    return isWrite
      ? { ...answered, state: 'uncertain', observation: null, error: { code: deadline ? 'deadline_exceeded' : 'outcome_unknown', message }, retryable: false }
      : { ...answered, state: 'failed', observation: null, error: { code, message }, retryable: true };
  }
}
