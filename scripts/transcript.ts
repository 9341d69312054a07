import type { JourneyStep } from './todo-journey.ts';

/** Human-readable lines for one journey step: the call, its decision, approval and outcome. */
export function describeStep(index: number, step: JourneyStep): string[] {
  const call = step.finished;
  const decision = call.phases.decision;
  const lines = [`[${index}] ${step.label}`, `    ${call.tool} ${call.version} ${JSON.stringify(call.arguments)}`];
  if (decision) lines.push(`    policy: ${decision.effect} by rule ${decision.rule} (${decision.reason})`);
  if (step.proposalStatus === 202) lines.push(`    proposal answered 202: waiting_for_approval, approval ${step.proposed.approval_id}`);
  if (step.approval) {
    // What the owner read before deciding: the target in words, as the observation showed it.
    lines.push(`    the owner is asked: ${step.approval.summary}`);
    lines.push(`    owner: ${step.approval.state} approval ${step.approval.id} at ${step.approval.decided_at}`);
  }
  if (call.phases.watermark) lines.push(`    effect watermark ${call.phases.watermark.effect_id} committed before dispatch`);
  const observation = call.result && 'snapshot' in call.result ? call.result : undefined;
  const settle = call.phases.settle;
  const dispatch = call.phases.dispatch;
  lines.push(
    `    outcome: ${call.state}` +
      (observation ? ` · revision ${observation.revision} · "${observation.title}"` : '') +
      (settle
        ? ` · settle ${settle.outcome} in ${settle.elapsed_ms} ms (${settle.pending_at_entry} requests pending at entry${settle.overflow ? ', overflow' : ''})`
        : '') +
      (dispatch?.elapsed_ms !== undefined ? ` · dispatch ${dispatch.elapsed_ms} ms` : '') +
      (call.error ? ` · error ${call.error.code}: ${call.error.message}` : ''),
  );
  const condition = call.result && 'condition' in call.result ? call.result.condition : undefined;
  if (condition) {
    lines.push(
      `    postcondition: ${condition.status} after ${condition.observations} observation(s) in ${condition.elapsed_ms} ms (window nodes ${condition.window_scope.start_node}-${condition.window_scope.end_node} of ${condition.window_scope.total_nodes})`,
    );
  }
  return lines;
}

/** A plain text table of rows (column widths fitted, long cells cut at `maxCell` characters). */
export function table(rows: Record<string, unknown>[], maxCell = 48): string {
  if (rows.length === 0) return '    (no rows)';
  const columns = Object.keys(rows[0]!);
  const cell = (value: unknown) => {
    const text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
    return text.length > maxCell ? `${text.slice(0, maxCell - 1)}…` : text;
  };
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => cell(row[column]).length)));
  const line = (values: string[]) => `    ${values.map((value, i) => value.padEnd(widths[i]!)).join('  ')}`;
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((row) => line(columns.map((column) => cell(row[column]))))].join('\n');
}
