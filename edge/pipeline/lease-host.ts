import type { ErrorCode } from '../../shared/errors.ts';
import type { HostMethod, HostParams, HostResult } from '../../shared/protocol.ts';
import type { RunRow } from '../db/schema.ts';
import { Deadline, HOST_ANSWER_MARGIN_MS, HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import { HostCallError, HostNoAnswer, type HostSession, HostUnreachable } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';

/** The read-only questions the pipeline asks the page of a run's lease before deciding a call (1.5.0). */
type LeaseQuestion = Extract<HostMethod, 'page.hit_test' | 'page.history'>;

/** Why a question about the run's page got no answer, in the pipeline's terms: the code and what to tell the agent. */
export class UnansweredQuestion extends Error {
  override readonly name = 'UnansweredQuestion';
  constructor(
    /** `invalid_arguments`: the host refused the agent's own argument; `stale_revision`: the page moved on or the run holds none; `host_unavailable`: no answer. */
    readonly code: Extract<ErrorCode, 'invalid_arguments' | 'stale_revision' | 'host_unavailable'>,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Asks the host that holds `run`'s lease one read-only question about its page (`page.hit_test`,
 * `page.history`), within 10 s for the connection and 10 s for the answer; the lease is neither
 * renewed nor acquired (nothing is dispatched here: the question only feeds the decision).
 * @throws UnansweredQuestion('stale_revision') when the run holds no lease or the host no longer
 *   has it or its page (`lease_lost`, `page_changed`, `stale_revision`): observe first;
 *   UnansweredQuestion('invalid_arguments') when the host refuses the question's arguments
 *   (`invalid_params`: a point outside the picture or on nothing actionable);
 *   UnansweredQuestion('host_unavailable') when the host cannot be reached, does not answer or
 *   fails otherwise.
 */
export async function askLeaseHost<M extends LeaseQuestion>(
  ports: Ports,
  run: Pick<RunRow, 'leaseId' | 'leaseHostUrl'>,
  method: M,
  question: Omit<HostParams<M>, 'lease_id' | 'timeout_ms'>,
): Promise<HostResult<M>> {
  if (run.leaseId === null || run.leaseHostUrl === null) {
    throw new UnansweredQuestion('stale_revision', 'the run holds no page right now; observe the page first');
  }
  const deadline = Deadline.after(ports.clock, HOST_CONNECT_MS + HOST_CALL_MS);
  let session: HostSession | undefined;
  try {
    session = await ports.dial(run.leaseHostUrl).connect(deadline.upTo(HOST_CONNECT_MS));
    const timeoutMs = Math.max(100, deadline.upTo(HOST_CALL_MS) - HOST_ANSWER_MARGIN_MS);
    const params = { ...question, lease_id: run.leaseId, timeout_ms: timeoutMs } as HostParams<M>;
    return await session.call(method, params, timeoutMs + HOST_ANSWER_MARGIN_MS);
  } catch (error) {
    if (error instanceof HostCallError) {
      if (error.code === 'invalid_params') throw new UnansweredQuestion('invalid_arguments', error.message);
      if (error.code === 'lease_lost' || error.code === 'page_changed' || error.code === 'stale_revision') {
        throw new UnansweredQuestion('stale_revision', `${error.message}; observe the page again`);
      }
      throw new UnansweredQuestion('host_unavailable', `the browser host could not answer ${method}: ${error.code}: ${error.message}`);
    }
    if (error instanceof HostUnreachable || error instanceof HostNoAnswer) {
      throw new UnansweredQuestion('host_unavailable', `the browser host could not answer ${method}: ${error.message}`);
    }
    throw error;
  } finally {
    session?.close();
  }
}
