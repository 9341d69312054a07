/**
 * The phase table of `npm run bench` (issue 35): where an observe's and an act's time goes, one
 * line per phase, each a median over the same run's calls, host phases (the wire answer's
 * `timings`, as `phase.<name>` in the edge's `Server-Timing`) and edge spans (`d1`, `upgrade`,
 * `hello`, `host.lease.renew`, `app`) alike, and the HTTP time the edge's clock does not see, so a
 * regression shows in one line.
 */
import { HostPhase } from '../shared/protocol.ts';
import { summary } from './stats.ts';

/** One HTTP call's `Server-Timing` spans, ms by name. */
export type Spans = Readonly<Record<string, number>>;

/** The spans of a `Server-Timing` header value (`name;dur=ms;desc=...`, comma-separated). */
export function spansOf(header: string | null): Record<string, number> {
  const spans: Record<string, number> = {};
  for (const part of (header ?? '').split(',')) {
    const match = /^\s*([\w.-]+);dur=([\d.]+)/.exec(part);
    if (match) spans[match[1] as string] = Number(match[2]);
  }
  return spans;
}

/** What each host phase is, as the table prints it. */
const HOST_PHASE_LABELS: Record<HostPhase, string> = {
  queue: 'waiting for the page (queue)',
  target_check: 'target check',
  actionability: 'actionability trial',
  input: 'input',
  settle: 'settle (quiet window, ADR-0159)',
  reach: 'census and reach (marks)',
  snapshot: 'snapshot (ariaSnapshot + title)',
  frames: 'frames (confinement)',
  marks: 'marks (names, inert, closed roots)',
  sign_in: 'sign-in evidence',
  screenshot: 'screenshot hand-off',
};

/** The edge's own spans, as the table prints them. */
const EDGE_SPANS: ReadonlyArray<readonly [string, string]> = [
  ['d1', 'D1 statements'],
  ['upgrade', 'WebSocket upgrade'],
  ['hello', "host's hello"],
  ['host.lease.renew', 'lease renewal (overlaps the call)'],
  ['app', 'the rest (validation, policy, JSON)'],
];

/** One call as the table reads it: its `Server-Timing` spans and, when known, its whole HTTP time in ms. */
export interface TimedCall {
  readonly spans: Spans;
  readonly httpMs?: number;
}

/** The wire call that carries a page operation, timed by the edge. */
const PAGE_CALLS = ['host.page.observe', 'host.page.act', 'host.page.navigate'];

/**
 * The table's lines: for each column (`[label, calls]`), the median of every host phase, of the
 * wire (the page call as the edge timed it less the host's phases: frames, JSON, schema checks on
 * both ends), of every edge span and, for calls whose HTTP time is known, of the time outside the
 * edge's own clock (the HTTP time less the edge's `total`: the dev server in front of the Worker,
 * and the Worker's CPU, which Workers' clocks do not count between two I/O waits); "-" where a
 * column's calls never passed through it.
 */
export function phaseTable(columns: ReadonlyArray<readonly [string, ReadonlyArray<TimedCall>]>): string[] {
  const cell = (calls: ReadonlyArray<TimedCall>, value: (spans: Spans, call: TimedCall) => number | undefined) => {
    const samples = calls.flatMap((call) => {
      const sample = value(call.spans, call);
      return sample === undefined ? [] : [sample];
    });
    return samples.length === 0 ? '-'.padStart(9) : summary(samples).median.toFixed(1).padStart(9);
  };
  const line = (label: string, value: (spans: Spans, call: TimedCall) => number | undefined) =>
    `  ${label.padEnd(44)}${columns.map(([, calls]) => cell(calls, value)).join('')}`;
  const hostSum = (spans: Spans) => HostPhase.options.reduce((sum, phase) => sum + (spans[`phase.${phase}`] ?? 0), 0);
  return [
    `  ${'phase (medians, ms)'.padEnd(44)}${columns.map(([label]) => label.padStart(9)).join('')}`,
    ...HostPhase.options.map((phase) => line(`host: ${HOST_PHASE_LABELS[phase]}`, (spans) => spans[`phase.${phase}`])),
    line('wire: the page call less the host phases', (spans) => {
      const call = PAGE_CALLS.map((name) => spans[name]).find((ms) => ms !== undefined);
      return call === undefined ? undefined : Math.max(0, call - hostSum(spans));
    }),
    ...EDGE_SPANS.map(([name, label]) => line(`edge: ${label}`, (spans) => spans[name])),
    line('edge: off its clock (dev server, CPU)', (spans, call) =>
      call.httpMs === undefined || spans.total === undefined ? undefined : Math.max(0, call.httpMs - spans.total),
    ),
  ];
}
