import type { CallPhases } from '../../shared/api.ts';
import type { HistoryMove } from '../../shared/tool-arguments.ts';
import type { ToolCommand, ToolInvocation } from '../../shared/tools.ts';
import type { RunRow } from '../db/schema.ts';
import type { Ports } from '../ports.ts';
import { askLeaseHost, UnansweredQuestion } from './lease-host.ts';

/**
 * History moves (1.5.0, issue 33): `browser.navigate {history: back | forward | reload}`. Before
 * the decision the edge asks the host which entry the move would land on (`page.history`, without
 * moving); the call is then decided exactly as a navigation to that entry's URL (hardline rules,
 * the `run_origin` condition, operator denies, page-derived URLs), so an entry outside the run's
 * origins is refused like any navigation there. The entry is kept in the call's phases
 * (`history`), and the host moves only if the landing entry is still that URL (`expected_url`).
 */

/** The entry a history move lands on: the move and the entry's URL. */
export type LandingEntry = NonNullable<CallPhases['history']>;

/**
 * The entry `move` would land on in the page of the run's lease (see `askLeaseHost`).
 * @throws UnansweredQuestion('invalid_arguments') when there is no such entry (nothing to go back
 *   or forward to); UnansweredQuestion('stale_revision') when the run holds no page;
 *   UnansweredQuestion('host_unavailable').
 */
export async function landingEntry(ports: Ports, run: Pick<RunRow, 'leaseId' | 'leaseHostUrl'>, move: HistoryMove): Promise<LandingEntry> {
  const { url } = await askLeaseHost(ports, run, 'page.history', { history: move });
  if (url === null) {
    throw new UnansweredQuestion('invalid_arguments', `history: there is no ${move === 'forward' ? 'next' : 'previous'} entry to go ${move} to`);
  }
  return { move, url };
}

/**
 * What policy decides a call as: a history move as the navigation to its landing entry's URL
 * (same tool and version, `{url}` as the arguments proposed); any other call as it is.
 */
export function policyInvocation(
  invocation: ToolInvocation,
  proposed: unknown,
  entry: LandingEntry | undefined,
): { invocation: ToolInvocation; proposed: unknown } {
  if (invocation.tool !== 'browser.navigate' || entry === undefined || !('history' in invocation.arguments)) return { invocation, proposed };
  const args = { url: entry.url };
  return { invocation: { tool: 'browser.navigate', version: invocation.version, arguments: args }, proposed: args };
}

/** The command dispatch sends: a history move carries its landing entry's URL as `expected_url`; anything else as it is. */
export function historyCommand(command: ToolCommand, entry: LandingEntry | undefined): ToolCommand {
  if (command.method !== 'page.navigate' || !('history' in command.params) || entry === undefined) return command;
  return { method: 'page.navigate', params: { history: command.params.history, expected_url: entry.url } };
}
