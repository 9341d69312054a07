import { describe, expect, it } from 'vitest';
import { HostCallError, HostNoAnswer, HostUnreachable } from '../../../edge/host/host-session.ts';
import { classifyFailure, inAgentTerms } from '../../../edge/pipeline/dispatch-outcome.ts';

// The failure classification called directly (DESIGN.md section 4): a write whose frame may have
// been acted on is `uncertain` and never retried; it is `failed` only when the host says it did
// not carry it out, or it was never sent. A read that failed is retryable.

const WRITE = true;
const READ = false;
const SENT = true;
const NOT_SENT = false;

describe('classifyFailure', () => {
  it('an unreachable host, or no answer before anything was sent, is host_unavailable and retryable, read or write', () => {
    for (const isWrite of [READ, WRITE]) {
      expect(classifyFailure(new HostUnreachable('refused'), isWrite, SENT)).toEqual({
        state: 'failed',
        observation: null,
        error: { code: 'host_unavailable', message: 'refused' },
        retryable: true,
        dispatch: 'not_sent',
      });
      expect(classifyFailure(new HostNoAnswer('connection_lost', 'dropped'), isWrite, NOT_SENT)).toMatchObject({
        state: 'failed',
        error: { code: 'host_unavailable' },
        retryable: true,
        dispatch: 'not_sent',
      });
    }
  });

  it('a host error that guarantees nothing was carried out fails a write with that code, retryable', () => {
    for (const code of ['stale_revision', 'lease_lost', 'page_changed', 'action_failed', 'admission_full', 'navigation_failed'] as const) {
      expect(classifyFailure(new HostCallError(code, 'no'), WRITE, SENT)).toEqual({
        state: 'failed',
        observation: null,
        error: { code, message: 'no' },
        retryable: true,
        dispatch: 'host_error',
      });
    }
  });

  it('any other host error after a write was sent makes it uncertain, outcome_unknown and never retried; a read just fails', () => {
    expect(classifyFailure(new HostCallError('outcome_unknown', 'maybe'), WRITE, SENT)).toEqual({
      state: 'uncertain',
      observation: null,
      error: { code: 'outcome_unknown', message: 'maybe' },
      retryable: false,
      dispatch: 'host_error',
    });
    expect(classifyFailure(new HostCallError('outcome_unknown', 'maybe'), READ, SENT)).toMatchObject({
      state: 'failed',
      error: { code: 'outcome_unknown' },
      retryable: true,
    });
  });

  it('a sent write with no answer (deadline or lost connection) is uncertain; a read is deadline_exceeded or host_unavailable', () => {
    expect(classifyFailure(new HostNoAnswer('deadline_exceeded', 'late'), WRITE, SENT)).toMatchObject({
      state: 'uncertain',
      error: { code: 'outcome_unknown' },
      retryable: false,
      dispatch: 'deadline_exceeded',
    });
    expect(classifyFailure(new HostNoAnswer('deadline_exceeded', 'late'), READ, SENT)).toMatchObject({
      state: 'failed',
      error: { code: 'deadline_exceeded' },
      retryable: true,
      dispatch: 'deadline_exceeded',
    });
    expect(classifyFailure(new HostNoAnswer('connection_lost', 'gone'), READ, SENT)).toMatchObject({
      state: 'failed',
      error: { code: 'host_unavailable' },
      dispatch: 'connection_lost',
    });
  });

  it('an unexpected error after sending is treated as a lost connection: uncertain for a write, host_unavailable for a read', () => {
    expect(classifyFailure(new Error('boom'), WRITE, SENT)).toMatchObject({
      state: 'uncertain',
      error: { code: 'outcome_unknown', message: 'boom' },
      retryable: false,
    });
    expect(classifyFailure(new Error('boom'), READ, SENT)).toMatchObject({ state: 'failed', error: { code: 'host_unavailable' }, retryable: true });
  });
});

describe('inAgentTerms', () => {
  it("restates the host's invalid_params as invalid_arguments only when the agent's own argument was refused", () => {
    const refused = new HostCallError('invalid_params', 'continuation: not issued by this host');
    expect(inAgentTerms(refused, true)).toMatchObject({ code: 'invalid_arguments', message: refused.message });
    expect(inAgentTerms(refused, false)).toBe(refused);
    const stale = new HostCallError('stale_revision', 'older revision');
    expect(inAgentTerms(stale, true)).toBe(stale);
  });
});
