import { describe, expect } from 'vitest';
import { ApiRequestError, observationOf } from '../../scripts/api-client.ts';
import { refOf, snapshotNodes } from '../../scripts/aria-refs.ts';
import type { ToolCallView } from '../../shared/api.ts';
import type { Observation } from '../../shared/observation.ts';
import type { Condition } from '../../shared/predicate.ts';
import { type Stacked, stackTest } from '../support/stack-fixture.ts';

// For each class of page where a person plainly sees something, a predicate through the HTTP API
// (real edge under wrangler dev, real host, real Chromium) sees it too.

const it = stackTest({ headless: true });

interface OpenRun extends Pick<Stacked, 'agent' | 'owner'> {
  readonly id: string;
  readonly page: Observation;
}

/** A new run on `path` of the fixture site, navigated there. */
async function open({ site, agent, owner }: Pick<Stacked, 'site' | 'agent' | 'owner'>, path: string): Promise<OpenRun> {
  const run = await owner.createRun({ profile_id: 'observation-classes', intent: `look at ${path}`, origins: [site.origin] });
  const page = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url(path) }, '1.4.0')).body);
  return { id: run.id, page, agent, owner };
}

/** Clicks `reference` on the run's page with `postcondition`, the owner approving. */
async function clickWith(run: OpenRun, page: Observation, reference: string, postcondition?: Condition): Promise<ToolCallView> {
  const proposal = await run.agent.propose(
    run.id,
    'browser.act',
    { action: 'click', revision: page.revision, reference, ...(postcondition ? { postcondition } : {}) },
    '1.4.0',
  );
  expect(proposal.status).toBe(202);
  return (await run.owner.decide(proposal.body.approval_id!, 'approve')).tool_call;
}

async function end(run: OpenRun): Promise<void> {
  await run.agent.report(run.id, 'completed', 'looked').catch(() => undefined);
}

describe('what a person sees, a predicate sees', () => {
  it('a feed of "Post #N" headings: a new post is a satisfied row of the list and a control by its name', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'observation/feed.html');
    try {
      const call = await clickWith(run, run.page, refOf(run.page.snapshot, 'button', 'Load more: #4'), {
        success: { kind: 'row', collection: { role: 'list', name: 'Posts' }, cells: { text: 'Post #4 Loaded: yes' } },
      });
      expect(call.state).toBe('succeeded');
      expect(observationOf(call).condition?.status).toBe('satisfied');
      const seen = observationOf(
        (await agent.propose(run.id, 'browser.observe', { wait_for: { success: { kind: 'control', role: 'heading', name: 'Post #4' } } }, '1.4.0')).body,
      );
      expect(seen.condition?.status).toBe('satisfied');
    } finally {
      await end(run);
    }
  });

  it('a link and a button named only by an image are found by that name, and the act is approved as the button "Search"', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'observation/image-controls.html');
    try {
      const home = observationOf(
        (await agent.propose(run.id, 'browser.observe', { wait_for: { success: { kind: 'control', role: 'link', name: 'Home' } } }, '1.4.0')).body,
      );
      expect(home.condition?.status).toBe('satisfied');
      const proposal = await agent.propose(
        run.id,
        'browser.act',
        {
          action: 'click',
          revision: home.revision,
          reference: refOf(home.snapshot, 'button', 'Search'),
          postcondition: { success: { kind: 'text', text: 'Clicked search' } },
        },
        '1.4.0',
      );
      const pending = (await owner.pendingApprovals()).find((approval) => approval.tool_call_id === proposal.body.id);
      // The owner judges the button by the name a person reads on it.
      expect(JSON.stringify(pending)).toContain('"Search"');
      const call = (await owner.decide(pending!.id, 'approve')).tool_call;
      expect(observationOf(call).condition?.status).toBe('satisfied');
    } finally {
      await end(run);
    }
  });

  it('a button inside a closed shadow root is clicked through the API and its effect observed', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'observation/closed-shadow.html');
    try {
      const call = await clickWith(run, run.page, refOf(run.page.snapshot, 'button', 'Pay now'), { success: { kind: 'text', text: 'Paid' } });
      expect(observationOf(call).condition?.status).toBe('satisfied');
    } finally {
      await end(run);
    }
  });

  it('a declarative closed shadow root is reported as incomplete at 1.4.0 and never at 1.3.0', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'observation/declarative-shadow.html');
    try {
      expect(run.page.incomplete).toEqual(['closed_shadow_root']);
      const pinned = await agent.propose(run.id, 'browser.observe', {}, '1.3.0');
      expect(observationOf(pinned.body)).not.toHaveProperty('incomplete');
    } finally {
      await end(run);
    }
  });

  it('behind a modal dialog a same-named button neither counts for a predicate nor can be acted on', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'observation/modal.html');
    try {
      const opened = observationOf(await clickWith(run, run.page, refOf(run.page.snapshot, 'button', 'Open dialog')));
      const saves = snapshotNodes(opened.snapshot).filter((node) => node.role === 'button' && node.name === 'Save');
      expect(saves.map((node) => node.inert)).toEqual([true, false]);
      // Two Save buttons on the page, one reachable: satisfied, not ambiguous.
      const seen = observationOf(
        (await agent.propose(run.id, 'browser.observe', { wait_for: { success: { kind: 'control', role: 'button', name: 'Save' } } }, '1.4.0')).body,
      );
      expect(seen.condition?.status).toBe('satisfied');
      const behind = snapshotNodes(seen.snapshot).find((node) => node.role === 'button' && node.name === 'Save' && node.inert)!;
      const refused = await agent
        .propose(run.id, 'browser.act', { action: 'click', revision: seen.revision, reference: behind.ref }, '1.4.0')
        .catch((error) => error);
      expect(refused).toBeInstanceOf(ApiRequestError);
      expect(refused).toMatchObject({ status: 409, code: 'not_actionable' });
      expect((await owner.pendingApprovals()).filter((approval) => approval.run_id === run.id)).toEqual([]);
    } finally {
      await end(run);
    }
  });

  it('a chat answer streamed by fetch as text/event-stream settles dom_quiet and satisfies its postcondition', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'settle/fetch-stream.html');
    try {
      const call = await clickWith(run, run.page, refOf(run.page.snapshot, 'button', 'Ask'), { success: { kind: 'text', text: 'Answer:' } });
      const observation = observationOf(call);
      expect(observation.settle.outcome).toBe('dom_quiet');
      expect(observation.condition?.status).toBe('satisfied');
    } finally {
      await end(run);
    }
  });

  it('an act whose postcondition needs several reads still reports its own settle on the returned observation', async ({ site, agent, owner }) => {
    const run = await open({ site, agent, owner }, 'postconditions/toast.html');
    try {
      const call = await clickWith(run, run.page, refOf(run.page.snapshot, 'button', 'Save draft'), {
        success: { kind: 'text', text: 'Draft saved' },
      });
      const observation = observationOf(call);
      expect(observation.condition?.status).toBe('satisfied');
      expect(observation.condition?.observations).toBeGreaterThan(1);
      expect(observation.settle.outcome).not.toBe('not_waited');
      expect(observation.settle).toEqual(call.phases.settle);
    } finally {
      await end(run);
    }
  });
});
