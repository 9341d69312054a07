/** Median and p95 (nearest rank) of samples in ms; NaN for no samples. */
export function summary(samples: number[]): { median: number; p95: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
  return { median: rank(0.5), p95: rank(0.95), n: sorted.length };
}

/** One printed row: name, median, p95 and sample count, aligned. */
export function row(name: string, samples: number[]): string {
  const { median, p95, n } = summary(samples);
  return `  ${name.padEnd(44)} median ${median.toFixed(1).padStart(8)} ms   p95 ${p95.toFixed(1).padStart(8)} ms   (n=${n})`;
}
