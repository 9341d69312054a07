import { splitSignIn } from '../../shared/authentication.ts';
import type { ConditionResult, Observation } from '../../shared/observation.ts';
import { type Condition, DEFAULT_PREDICATE_TIMEOUT_MS } from '../../shared/predicate.ts';
import { conditionStatus } from '../../shared/predicate-evaluation.ts';
import type { WireDownload } from '../../shared/run-files.ts';
import { type Deadline, HOST_CALL_MS } from '../deadline.ts';
import type { HostSession } from '../host/host-session.ts';
import type { Clock } from '../ports.ts';

/** Least spacing between two reads, in ms (DESIGN.md section 11). */
export const MIN_READ_SPACING_MS = 250;
/** Most reads after the initial observation (DESIGN.md section 11). */
export const MAX_READS = 20;

/** Of each read's time, what is kept for its answer on the wire, in ms. */
const ANSWER_MARGIN_MS = 200;

/** The outer (tool or run) deadline passed while reading: the caller decides what that means. */
export class ConditionDeadlineExceeded extends Error {
  override readonly name = 'ConditionDeadlineExceeded';
  constructor(readonly observations: number) {
    super(`the tool deadline passed during condition reads (after ${observations} observations)`);
  }
}

/**
 * Evaluates a condition on the initial observation, then, while it is `not_observed`, reads
 * again with ordinary `page.observe` commands, each sent at least 250 ms after the previous answer,
 * at most 20 times, until the
 * condition's budget (`timeout_ms`, default 2,000 ms) ends (ADR-0159, ADR-0164 part 1). The
 * window is never expanded to search. Reads that the outer deadline cuts short throw.
 * @param deadline the tool deadline (already capped by the run deadline); each read gets what is
 *   left of it, at most {@link HOST_CALL_MS}, less a 200 ms margin for the answer.
 * @returns the last observation read, with the initial observation's settle report (how the
 *   command itself settled) and what every read reported the page tried (`blocked`, `dialogs`,
 *   the newest 64 and 32), and the report (reads counted, elapsed ms).
 * @throws ConditionDeadlineExceeded when `deadline` passes before the budget ends or a
 *   read fails; errors of the session otherwise.
 * @param downloads receives the downloads each read reported (1.5.0, wire form): the host reports
 *   each once, so the caller keeps them whichever read brought them.
 */
export async function awaitCondition(
  clock: Clock,
  session: HostSession,
  leaseId: string,
  condition: Condition,
  initial: Observation,
  deadline: Deadline,
  downloads: WireDownload[] = [],
): Promise<{ observation: Observation; report: ConditionResult }> {
  const startedAt = clock.now();
  const budgetEnd = startedAt + (condition.timeout_ms ?? DEFAULT_PREDICATE_TIMEOUT_MS);
  let latest = initial;
  // What the page tried is reported once by the host: keep every read's, not just the last.
  const blocked = [...(initial.blocked ?? [])];
  const dialogs = [...(initial.dialogs ?? [])];
  let observations = 1;
  let status = conditionStatus(condition, latest);
  const report = (): ConditionResult => ({ status, observations, elapsed_ms: clock.now() - startedAt, window_scope: latest.window.scope });

  // Spacing counts from the previous answer, so reads are at least 250 ms apart however they are
  // measured (sent, received by the host, or answered).
  let lastAnswerAt = startedAt;
  while (status === 'not_observed' && observations <= MAX_READS) {
    const nextReadAt = lastAnswerAt + MIN_READ_SPACING_MS;
    if (nextReadAt > budgetEnd) break;
    if (nextReadAt >= deadline.endsAt) throw new ConditionDeadlineExceeded(observations);
    await clock.sleep(Math.max(0, nextReadAt - clock.now()));
    const timeoutMs = deadline.upTo(HOST_CALL_MS);
    if (timeoutMs < 100) throw new ConditionDeadlineExceeded(observations);
    try {
      const read = splitSignIn(await session.call('page.observe', { lease_id: leaseId, timeout_ms: Math.max(100, timeoutMs - ANSWER_MARGIN_MS) }, timeoutMs));
      latest = read.observation;
      downloads.push(...(read.downloads ?? []));
    } catch (error) {
      if (deadline.passed(ANSWER_MARGIN_MS)) throw new ConditionDeadlineExceeded(observations);
      throw error;
    }
    lastAnswerAt = clock.now();
    blocked.push(...(latest.blocked ?? []));
    dialogs.push(...(latest.dialogs ?? []));
    observations++;
    status = conditionStatus(condition, latest);
  }
  const { blocked: _blocked, dialogs: _dialogs, ...last } = latest;
  return {
    // The command's own settle report stays on the observation it returns (ADR-0159); the reads'
    // count and time are in the report beside it.
    observation: {
      ...last,
      settle: initial.settle,
      ...(blocked.length > 0 ? { blocked: blocked.slice(-64) } : {}),
      ...(dialogs.length > 0 ? { dialogs: dialogs.slice(-32) } : {}),
    },
    report: report(),
  };
}
