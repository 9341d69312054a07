import type { CorpusScore, EvidenceBundle } from '../../shared/memory-evidence.ts';

// What `npm run memory:evaluate` prints: one table row per repeat and corpus, then the gates with
// the figure measured, the threshold and PASS or FAIL.

/** Recall as a share with its counts, e.g. `0.956 (43/45)`. */
function share(part: number, whole: number): string {
  return `${(whole === 0 ? 1 : part / whole).toFixed(3)} (${part}/${whole})`;
}

/** Header and rows padded to columns. */
function table(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const COLUMNS = ['repeat', 'corpus', 'recall', 'represented', 'boundary failures', 'refused', 'calls', 'cost USD'];

function row(index: number, corpus: string, score: CorpusScore): string[] {
  return [
    String(index + 1),
    corpus,
    share(score.directly_recalled, score.needed),
    `${score.represented}/${score.seeded}`,
    String(score.boundary_failures.length),
    String(score.refused),
    String(score.provider_calls),
    score.cost_usd.toFixed(4),
  ];
}

/**
 * One repeat as it ends: its two table rows, and below them every seeded clause left
 * unrepresented and every boundary failure by case and memory.
 */
export function formatRepeat(index: number, repeat: EvidenceBundle['repeats'][number]): string {
  const lines = [table([COLUMNS, row(index, 'development', repeat.development), row(index, 'holdout', repeat.holdout)])];
  for (const corpus of ['development', 'holdout'] as const) {
    const score = repeat[corpus];
    if (score.unrepresented.length > 0) lines.push(`  ${corpus}: seeded clauses not represented: ${score.unrepresented.join(', ')}`);
    for (const failure of score.boundary_failures) {
      lines.push(`  ${corpus}: boundary failure: ${failure.case_id}:${failure.memory_id} (${failure.kind})`);
    }
  }
  return lines.join('\n');
}

/** The whole evaluation: every repeat's rows, the totals and the gates, PASS or FAIL each. */
export function formatEvaluation(bundle: EvidenceBundle): string {
  const rows = [COLUMNS, ...bundle.repeats.flatMap((repeat, index) => [row(index, 'development', repeat.development), row(index, 'holdout', repeat.holdout)])];
  const gates = [
    ['gate', 'figure', 'threshold', 'result'],
    ...bundle.gates.map((gate) => [
      gate.name,
      gate.name === 'boundary_failures' ? String(gate.figure) : gate.figure.toFixed(3),
      gate.name === 'boundary_failures' ? `at most ${gate.threshold}` : `at least ${gate.threshold}`,
      gate.passed ? 'PASS' : 'FAIL',
    ]),
  ];
  return [
    '',
    `provider ${bundle.provider}; policy profile ${bundle.policy_profile.name} v${bundle.policy_profile.version} ${bundle.policy_profile.hash}`,
    `corpora: development ${bundle.corpora.development.hash} (${bundle.corpora.development.cases} cases), holdout ${bundle.corpora.holdout.hash} (${bundle.corpora.holdout.cases} cases)`,
    '',
    table(rows),
    `total: ${bundle.provider_calls} provider calls, ${bundle.cost_usd.toFixed(4)} USD`,
    '',
    table(gates),
    '',
    bundle.passed
      ? 'all gates PASS'
      : `gates FAIL: ${bundle.gates
          .filter((g) => !g.passed)
          .map((g) => g.name)
          .join(', ')}`,
  ].join('\n');
}
