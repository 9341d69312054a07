import type { ApprovalView, RunView, ToolCallView } from '../shared/api.ts';
import type { Observation } from '../shared/observation.ts';
import { ApiClient, observationOf as finishedObservation } from './api-client.ts';
import { refOf, subtreeMentioning } from './aria-refs.ts';

/** What the journey needs: the edge URL, the two tokens and the TodoMVC app's URL and origin. */
export interface JourneyTarget {
  edgeUrl: string;
  tokens: { agent: string; owner: string };
  todoUrl: string;
  siteOrigin: string;
}

/** One step as the transcript and the tests see it. */
export interface JourneyStep {
  readonly label: string;
  /** HTTP status of the proposal (200 finished, 202 waiting for approval). */
  readonly proposalStatus: number;
  /** The call as first answered (for 202: waiting_for_approval). */
  readonly proposed: ToolCallView;
  /** The approval the owner decided, when the call needed one. */
  readonly approval?: ApprovalView;
  /** The call once finished (after approval and dispatch). */
  readonly finished: ToolCallView;
}

export interface JourneyRecord {
  readonly run: RunView;
  readonly steps: JourneyStep[];
  readonly finalRun: RunView;
  /** The todo text the journey added. */
  readonly todo: string;
}

function observationOf(step: JourneyStep): Observation {
  return finishedObservation(step.finished);
}

/**
 * The demo agent's journey over HTTP only (DESIGN.md section 13): create a run, navigate to the
 * TodoMVC app, observe, scroll (allowed without asking), type a todo with Enter (the owner approves
 * through the API), observe that
 * it is listed, tick it done (approved again), observe, and report. Throws when any step does not
 * produce what a careful agent would check for; `onStep` sees each step as it finishes, and
 * `onWaiting` each call that waits for the owner (its step label and approval id) before the
 * scripted owner answers it.
 */
export async function runTodoJourney(
  target: JourneyTarget,
  onStep: (step: JourneyStep) => void = () => {},
  todo = 'Buy oat milk',
  onWaiting: (label: string, approvalId: string) => void = () => {},
): Promise<JourneyRecord> {
  const agent = new ApiClient(target.edgeUrl, target.tokens.agent);
  const owner = new ApiClient(target.edgeUrl, target.tokens.owner);
  const steps: JourneyStep[] = [];

  // The owner asks (a trusted message gives the turn its authority); the agent claims the run
  // with its first proposal.
  const run = await owner.createRun({
    profile_id: 'demo-todo',
    intent: `Add "${todo}" to my todo list and mark it done`,
    origins: [target.siteOrigin],
    deadline_ms: 180_000,
  });

  const step = async (label: string, tool: string, args: Record<string, unknown>): Promise<JourneyStep> => {
    const proposal = await agent.propose(run.id, tool, args);
    let approval: ApprovalView | undefined;
    let finished = proposal.body;
    if (proposal.status === 202) {
      onWaiting(label, proposal.body.approval_id ?? '');
      // The owner sees the exact call in the pending list and approves it once.
      const pending = await owner.pendingApprovals();
      const mine = pending.find((entry) => entry.tool_call_id === proposal.body.id);
      if (!mine) throw new Error(`${label}: the owner does not see approval ${proposal.body.approval_id}`);
      const decided = await owner.decide(mine.id, 'approve');
      approval = decided.approval;
      // The agent learns the outcome the way a remote agent would: by long-polling its call.
      finished = await agent.toolCall(proposal.body.id, 30_000);
    }
    const record: JourneyStep = { label, proposalStatus: proposal.status, proposed: proposal.body, finished, ...(approval ? { approval } : {}) };
    steps.push(record);
    onStep(record);
    return record;
  };

  await step('open the todo app', 'browser.navigate', { url: target.todoUrl });
  const seen = observationOf(await step('observe the page', 'browser.observe', {}));
  // A bounded scroll (1-2,000 px) is allowed without asking (ADR-0168), even with a page-derived
  // reference; every other act still waits for the owner.
  const first = observationOf(
    await step('scroll down 300 px', 'browser.act', {
      action: 'scroll',
      revision: seen.revision,
      reference: refOf(seen.snapshot, 'heading', 'todos'),
      delta: 300,
    }),
  );
  const input = refOf(first.snapshot, 'textbox', 'What needs to be done?');
  // Each act carries a postcondition the edge checks with ordinary reads: evidence of what the
  // page shows afterwards, not proof that the write happened.
  observationOf(
    await step(`type "${todo}" and press Enter`, 'browser.act', {
      action: 'type',
      revision: first.revision,
      reference: input,
      text: todo,
      submit: true,
      postcondition: { success: { kind: 'text', text: '1 item left' } },
    }),
  );

  const listed = observationOf(await step('observe that the todo is listed', 'browser.observe', {}));
  const item = subtreeMentioning(listed.snapshot, 'listitem', todo);
  const checkbox = item.find((node) => node.role === 'checkbox');
  if (!checkbox?.ref) throw new Error(`the todo "${todo}" is not in the list:\n${listed.snapshot}`);
  if (checkbox.checked) throw new Error(`the new todo "${todo}" is already ticked`);

  observationOf(
    await step("click the todo's checkbox to tick it done", 'browser.act', {
      action: 'click',
      revision: listed.revision,
      reference: checkbox.ref,
      postcondition: { success: { kind: 'text', text: '0 items left' } },
    }),
  );
  const done = observationOf(await step('observe that the todo is done', 'browser.observe', {}));
  const doneBox = subtreeMentioning(done.snapshot, 'listitem', todo).find((node) => node.role === 'checkbox');
  if (!doneBox?.checked) throw new Error(`the todo "${todo}" is not ticked after the check:\n${done.snapshot}`);

  const finalRun = await agent.report(run.id, 'completed', `Added "${todo}" to the todo list and ticked it done; the page shows it checked.`);
  return { run, steps, finalRun, todo };
}
