import { and, eq } from 'drizzle-orm';
import { z } from 'zod';
import { type ActTarget, frameOriginsOf } from '../../shared/act-target.ts';
import type { DecisionRecord, ProposeBody } from '../../shared/api.ts';
import { originOf } from '../../shared/origin.ts';
import { namesPoint, wireAction } from '../../shared/tool-arguments.ts';
import { callTraits, parseInvocation } from '../../shared/tools.ts';
import { keepScreenshot } from '../artifacts/screenshots.ts';
import type { Principal } from '../auth/principal.ts';
import { translateConstraint } from '../db/constraints.ts';
import { newId } from '../db/ids.ts';
import { approvals, type RunRow, runs, type ToolCallRow, toolCalls } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { dialEarly } from '../fleet/early-connection.ts';
import { coveringGrant } from '../grants/grants.ts';
import { notifyOwner } from '../notifications/webhooks.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import { decideForRun } from '../policy/decision-input.ts';
import type { Ports } from '../ports.ts';
import { reserveLease } from '../quotas/lease-availability.ts';
import { proposalGates } from '../quotas/rates.ts';
import { holdRun } from '../runs/lifecycle.ts';
import { actTarget } from './act-target.ts';
import { beginDispatch, type NewCall } from './begin-dispatch.ts';
import { dispatchCall } from './dispatch.ts';
import { landingEntry, policyInvocation } from './history.ts';
import { UnansweredQuestion } from './lease-host.ts';
import { settleIfLost } from './lost-dispatch.ts';
import { framedTarget, resolvePoints } from './points.ts';
import { loadProposalContext } from './proposal-context.ts';
import { carriesPageDerivedReferences, turnContext } from './turn.ts';
import { withUploadFile } from './upload-target.ts';

/** What proposing a call produced: a finished call (200) or one parked for the owner (202). */
export interface ProposalOutcome {
  readonly status: 200 | 202;
  readonly call: ToolCallRow;
  readonly approvalId: string | null;
}

/**
 * The tool pipeline for one proposed call (DESIGN.md section 4): validate against the pinned
 * version; hold the run; refuse a repeat of a call whose outcome is unknown; check the revision;
 * ask the host where a history move lands (`phases.history`, decided as the navigation there:
 * edge/pipeline/history.ts); resolve an act's points to references (edge/pipeline/points.ts);
 * bind an act to its target as the run's observations showed it (`phases.target`); decide by policy (authority, taint, profile, overlays); then deny, park for the owner, let a
 * grant cover it, or dispatch exactly one command and record its outcome.
 * @throws DomainError('invalid_arguments') for arguments the pinned schema rejects (the rejection is
 *   stored); DomainError('outcome_unknown') for a repeat of an uncertain call (never resent);
 *   DomainError('stale_revision') for an act on anything but the latest revision;
 *   DomainError('invalid_arguments') for an act on a reference (its own, a drag's destination, a
 *   fill_form's field or submit button) no observation of that revision the run received shows,
 *   or a fill_form field whose role cannot take its value, a point outside the picture or on
 *   nothing actionable, or a history move with no entry to land on (stored); DomainError('not_actionable') when one
 *   of them is inert (edge/pipeline/act-target.ts);
 *   DomainError('stale_revision') for a point or history move when the run holds no page;
 *   DomainError('host_unavailable') when the host cannot answer where a point or history move
 *   lands (nothing stored); DomainError('invalid_arguments') for an upload naming a file this run
 *   does not have;
 *   DomainError('policy_denied') with the deciding rule; DomainError('run_not_active' |
 *   'call_in_progress' | 'forbidden') when the run cannot take a call now; DomainError('profile_revoked')
 *   when the owner revoked the run's profile (the proposal rates are counted before, by the
 *   agent entry, edge/pipeline/agent-entry.ts); DomainError('profile_in_use' | 'quota_exceeded') when a needed lease cannot be had (see
 *   `reserveLease`). Refusals before a call is stored change nothing.
 */
export async function proposeToolCall(ports: Ports, principal: Principal, run: RunRow, body: ProposeBody): Promise<ProposalOutcome> {
  return proposeOnRun(ports, principal, run.id, body);
}

/**
 * {@link proposeToolCall} on the run with id `runId`, read together with everything else the
 * proposal needs in one statement (see {@link loadProposalContext}).
 * @param options.admit count the proposal against the agent's and its owner's proposal rates
 *   (quotas/rates.ts `proposalGates`) in that same statement.
 * @throws DomainError('rate_limited') with Retry-After past the rates (with `admit`; nothing
 *   counted, read or stored); DomainError('not_found') when the principal's owner has no such
 *   run; else as {@link proposeToolCall}.
 */
export async function proposeOnRun(
  ports: Ports,
  principal: Principal,
  runId: string,
  body: ProposeBody,
  options: { readonly admit?: boolean } = {},
): Promise<ProposalOutcome> {
  const now = ports.clock.now();
  const argumentsHash = await canonicalHash({ tool: body.tool, version: body.version, arguments: body.arguments });
  const { reference, revision } = (body.arguments ?? {}) as { reference?: unknown; revision?: unknown };
  const act =
    body.tool === 'browser.act' && typeof reference === 'string' && reference.length <= 32 && Number.isSafeInteger(revision)
      ? { tool: body.tool, reference, revision: revision as number }
      : undefined;
  const context = await loadProposalContext(ports, principal, runId, argumentsHash, act, options.admit === true ? proposalGates(ports, principal) : undefined);
  const loadedRun = context.run;
  const base = {
    runId: loadedRun.id,
    principalId: principal.id,
    tool: body.tool,
    version: body.version,
    arguments: body.arguments,
    argumentsHash,
    createdAt: now,
    updatedAt: now,
  };
  const reject = async (code: 'invalid_arguments' | 'outcome_unknown' | 'stale_revision' | 'not_actionable', message: string) => {
    const id = newId('call');
    const stored = { ...base, arguments: rejectedArguments(body.arguments), errorMessage: message.slice(0, MAX_REJECTION_MESSAGE_CHARS) };
    await ports.db.insert(toolCalls).values({ ...stored, id, state: 'rejected', errorCode: code, phases: {} });
    return id;
  };

  const parsed = parseInvocation(body.tool, body.version, body.arguments);
  if (!parsed.success) {
    const message = z.prettifyError(parsed.error);
    await reject('invalid_arguments', message);
    throw new DomainError('invalid_arguments', `${body.tool} ${body.version}: ${message}`);
  }
  const pinned = loadedRun.pinnedVersions?.[body.tool];
  if (pinned !== undefined && pinned !== body.version) {
    const message = `this run pins ${body.tool} to version ${pinned}`;
    await reject('invalid_arguments', message);
    throw new DomainError('invalid_arguments', message);
  }
  const { invocation } = parsed;
  const traits = callTraits(invocation);
  if (context.profileRevoked) throw new DomainError('profile_revoked', `profile ${loadedRun.profileId} was revoked`);
  const run = await holdRun(ports, principal, loadedRun);
  // A dispatch abandoned by a crashed edge must not block the run until someone reads that call.
  let unknownId = context.uncertainCallId;
  let turn = context.turn;
  let actResults = context.actResults;
  if (context.dispatchingCallIds.length > 0) {
    actResults = undefined;
    const stuck = await ports.db
      .select()
      .from(toolCalls)
      .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.state, 'dispatching')));
    for (const call of stuck) await settleIfLost(ports, call);
    // Settling them may have made one uncertain or given it a result: read both again.
    const unknown = await ports.db
      .select({ id: toolCalls.id })
      .from(toolCalls)
      .where(and(eq(toolCalls.runId, run.id), eq(toolCalls.argumentsHash, argumentsHash), eq(toolCalls.state, 'uncertain')))
      .get();
    unknownId = unknown?.id;
    turn = await turnContext(ports, run);
  }
  if (unknownId !== undefined) {
    const message = `the same call (${unknownId}) was already sent and its outcome is unknown; it is never sent again`;
    await reject('outcome_unknown', message);
    throw new DomainError('outcome_unknown', message, { tool_call_id: unknownId });
  }

  if (traits.targetRevision !== undefined && traits.targetRevision !== run.latestRevision) {
    const message =
      run.latestRevision === null
        ? 'the run has no observation yet; observe the page first'
        : `revision ${traits.targetRevision} is not the latest (${run.latestRevision}); observe again`;
    await reject('stale_revision', message);
    throw new DomainError('stale_revision', message);
  }

  // A question the host answered for the decision with a refusal is a rejection (stored), a host
  // that could not answer one a failure that changes nothing.
  const refused = async (error: unknown): Promise<never> => {
    if (!(error instanceof UnansweredQuestion)) throw error;
    if (error.code === 'host_unavailable') throw new DomainError('host_unavailable', error.message);
    await reject(error.code, error.message);
    throw new DomainError(error.code, error.message);
  };
  // A history move is decided as the navigation to the entry it lands on (edge/pipeline/history.ts).
  const entry = traits.historyMove === undefined ? undefined : await landingEntry(ports, run, traits.historyMove).catch(refused);
  const forPolicy = policyInvocation(invocation, body.arguments, entry);

  // An act is bound to its target as the agent was shown it (README "Confinement").
  let target: ActTarget | undefined;
  // What the owner is shown if the call parks: the page at the act's revision with its target, else the run's page.
  let pictured: ParkedPicture | undefined = run.latestRevision === null ? undefined : { revision: run.latestRevision };
  if (invocation.tool === 'browser.act') {
    // Points become the references the host finds there; from then on it is a reference act (edge/pipeline/points.ts).
    const pointed = namesPoint(invocation.arguments) ? await resolvePoints(ports, run, invocation.arguments).catch(refused) : undefined;
    const action = wireAction(invocation.arguments, pointed);
    pictured = { revision: action.revision, reference: action.reference };
    const bound = await actTarget(ports, run, action, actResults);
    if (bound.refused !== undefined) {
      await reject(bound.refused.code, bound.refused.message);
      throw new DomainError(bound.refused.code, bound.refused.message);
    }
    // An iframe it touches stands for the frame it holds, whether named by reference or by a point.
    const pointedAt = await framedTarget(ports, run, bound.target, invocation.arguments).catch(refused);
    // An upload names one of this run's attached files, and its approval names the file.
    const upload = await withUploadFile(ports, run, action, pointedAt);
    if (upload.refused !== undefined) {
      await reject('invalid_arguments', upload.refused);
      throw new DomainError('invalid_arguments', upload.refused);
    }
    target = upload.target;
  }

  const decision = await decideForRun(
    ports.db,
    run,
    forPolicy.invocation,
    forPolicy.proposed,
    {
      authority: turn.authority,
      tainted: turn.tainted,
      pageDerived: await carriesPageDerivedReferences(ports, run, forPolicy.invocation, turn),
    },
    target,
    { stored: context.policyProfile },
  );
  const decided: NewCall = {
    ...base,
    id: newId('call'),
    decisionEffect: decision.effect,
    decisionRule: decision.rule,
    policyHash: decision.policy_hash,
    phases: { decision, ...(target !== undefined ? { target } : {}), ...(entry !== undefined ? { history: entry } : {}) },
  };

  if (decision.effect === 'deny') {
    await ports.db.insert(toolCalls).values({ ...decided, state: 'denied', errorCode: 'policy_denied', errorMessage: decision.reason });
    throw new DomainError('policy_denied', `denied by rule ${decision.rule}: ${decision.reason}`, { tool_call_id: decided.id, rule: decision.rule });
  }

  if (decision.effect === 'approval') {
    // A grant covers what the act touches: the frames holding its elements (the page's for the
    // main frame). A grant is of one origin, so an act touching frames of two origins asks the owner.
    const touched = target === undefined ? [] : frameOriginsOf(target);
    const touchedOrigin = target === undefined ? (run.latestUrl === null ? undefined : originOf(run.latestUrl)) : touched.length === 1 ? touched[0] : undefined;
    const grant = await coveringGrant(
      ports,
      run.ownerId,
      forPolicy.invocation,
      touchedOrigin,
      { profile: run.policyProfile, hash: decision.policy_hash },
      context.grantCandidates,
    );
    if (grant) {
      // The host's connection opens while the call is recorded; nothing is sent on it before.
      const early = dialEarly(ports, run);
      try {
        // About to dispatch: a call that needs a new lease takes it only if the profile is free and the owner under its browser quota.
        const reserved = await reserveLease(ports, run);
        const covered = { ...decided, phases: { ...decided.phases, decision: { ...decision, grant_id: grant.id } } };
        const started = await beginDispatch(ports, run, covered, invocation, { by: 'grant', grant }).catch((error: unknown) => {
          // The grant ran out between the look-up and the batch: ask the owner instead.
          if (error instanceof DomainError && error.code === 'already_decided') return undefined;
          throw error;
        });
        if (started) return { status: 200, call: await dispatchCall(ports, reserved, started, invocation, early), approvalId: null };
      } finally {
        early?.discard();
      }
    }
    return park(ports, run, decided, decision, argumentsHash, context.ownerHasWebhook, pictured);
  }

  // The host's connection opens while the call is recorded; nothing is sent on it before.
  const early = dialEarly(ports, run);
  try {
    const reserved = await reserveLease(ports, run);
    const call = await beginDispatch(ports, run, decided, invocation, { by: 'policy' });
    return { status: 200, call: await dispatchCall(ports, reserved, call, invocation, early), approvalId: null };
  } finally {
    early?.discard();
  }
}

/** Longest JSON of a rejected proposal's arguments kept whole, in characters; past it, an excerpt. */
export const MAX_REJECTED_ARGUMENTS_CHARS = 2048;
/** Longest error message stored with a rejection, in characters (a schema's message can repeat a huge input). */
const MAX_REJECTION_MESSAGE_CHARS = 2048;

/**
 * What a rejected proposal keeps of its arguments: the arguments whole when their JSON is at most
 * {@link MAX_REJECTED_ARGUMENTS_CHARS}, else `{excerpt, bytes, truncated: true}` (the first
 * characters and the UTF-8 size of the whole); the row's `arguments_hash` is always of the whole.
 * A flood of 256 KiB rejections stores about 2 KiB each.
 */
export function rejectedArguments(args: unknown): unknown {
  const json = JSON.stringify(args) ?? 'null';
  if (json.length <= MAX_REJECTED_ARGUMENTS_CHARS) return args;
  return { excerpt: json.slice(0, MAX_REJECTED_ARGUMENTS_CHARS), bytes: new TextEncoder().encode(json).length, truncated: true };
}

/** The page revision (and act target) a parked call's screenshot shows the owner. */
interface ParkedPicture {
  readonly revision: number;
  readonly reference?: string;
}

/**
 * Parks a call for the owner: call, approval and run state in one batch (DESIGN.md section 4).
 * Afterwards, in the background, the owner's webhook (when set) and a screenshot of the page the
 * call is about, with the act's target outlined (issue 15), when the run holds a lease.
 */
async function park(
  ports: Ports,
  run: RunRow,
  decided: NewCall,
  decision: DecisionRecord,
  argumentsHash: string,
  ownerHasWebhook: boolean,
  pictured: ParkedPicture | undefined,
): Promise<ProposalOutcome> {
  const now = ports.clock.now();
  const approvalId = newId('apr');
  const call: ToolCallRow = {
    ...decided,
    state: 'waiting_for_approval',
    result: null,
    shownUrls: null,
    ownUrls: null,
    errorCode: null,
    errorMessage: null,
    retryable: null,
    phases: { ...decided.phases, approval: { approval_id: approvalId, decision: 'pending', at: iso(now) } },
    deadlineAt: null,
  };
  try {
    await ports.db.batch([
      ports.db.insert(toolCalls).values(call),
      ports.db.insert(approvals).values({
        id: approvalId,
        toolCallId: call.id,
        runId: run.id,
        ownerId: run.ownerId,
        state: 'pending',
        argumentsHash,
        policyHash: decision.policy_hash,
        createdAt: now,
      }),
      ports.db
        .update(runs)
        .set({ state: 'waiting_for_approval', updatedAt: now })
        .where(and(eq(runs.id, run.id), eq(runs.state, 'running'))),
    ]);
  } catch (error) {
    throw translateConstraint(error);
  }
  if (ownerHasWebhook) notifyOwner(ports, run.ownerId, 'approval_needed', { run_id: run.id, approval_id: approvalId, tool_call_id: call.id, tool: call.tool });
  const { leaseId, leaseHostUrl: hostUrl } = run;
  if (pictured !== undefined && leaseId !== null && hostUrl !== null) {
    ports.background(`the screenshot of parked call ${call.id}`, () =>
      keepScreenshot(ports, { ownerId: run.ownerId, runId: run.id, toolCallId: call.id, kind: 'parked', leaseId, hostUrl, ...pictured }),
    );
  }
  return { status: 202, call, approvalId };
}
