import { describe, expect } from 'vitest';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import type { BlockedRequest, Observation } from '../../shared/observation.ts';
import { crashPage } from '../support/profile-devtools.ts';
import { requestCounterFixture } from '../support/request-counter.ts';
import { type Stacked, stackTest } from '../support/stack-fixture.ts';

// The boundary toward the page, end to end: the real edge (wrangler dev) and the real host
// (headed Chromium under Xvfb), driven over HTTP. A second loopback server, on another port and
// never one of the run's origins, counts every connection it gets (`other`): it must count zero.

// Person debugging gives the test a DevTools port to crash a renderer, as a dying page would.
const it = stackTest({ headless: false, hostVars: { HOST_PERSON_DEBUGGING: '1' }, edgeVars: { TOOL_DEADLINE_MS: '15000' } }).extend(
  'other',
  { scope: 'file' },
  requestCounterFixture,
);

async function newRun({ owner, site }: Pick<Stacked, 'owner' | 'site'>, intent: string, profile = 'confinement'): Promise<RunView> {
  return owner.createRun({ profile_id: profile, intent, origins: [site.origin] });
}

/** Proposes an act and has the owner approve it; the finished call. */
async function approvedAct({ agent, owner }: Pick<Stacked, 'agent' | 'owner'>, run: RunView, args: Record<string, unknown>): Promise<ToolCallView> {
  const proposal = await agent.propose(run.id, 'browser.act', args, '1.3.0');
  if (proposal.status === 200) return proposal.body;
  const pending = (await owner.pendingApprovals()).find((approval) => approval.tool_call_id === proposal.body.id);
  return (await owner.decide(pending!.id, 'approve')).tool_call;
}

/** A profile's page stays usable: a new navigation (the owner asked for it) and an approved click work. */
async function usable(parties: Pick<Stacked, 'site' | 'agent' | 'owner'>, run: RunView): Promise<void> {
  const { site, agent, owner } = parties;
  // Earlier pages of the run may link to it (quiet.html does): the owner's message makes it the owner's.
  await owner.raw('POST', `/v1/runs/${run.id}/messages`, { text: 'open the button page' });
  const page = await open(agent, run, site.url('button.html'));
  const before = site.hits('click');
  const clicked = await approvedAct(parties, run, { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Record click') });
  expect(clicked.state).toBe('succeeded');
  expect(site.hits('click')).toBe(before + 1);
}

async function open(agent: ApiClient, run: RunView, url: string): Promise<Observation> {
  const answer = await agent.propose(run.id, 'browser.navigate', { url }, '1.3.0');
  expect(answer.body, `${answer.body.state} ${JSON.stringify(answer.body.error)}`).toMatchObject({ state: 'succeeded' });
  return observationOf(answer.body);
}

async function observeAfterAMoment(agent: ApiClient, run: RunView): Promise<Observation> {
  await new Promise((resolve) => setTimeout(resolve, 700));
  return observationOf((await agent.propose(run.id, 'browser.observe', {}, '1.3.0')).body);
}

describe('egress confinement through the HTTP API', () => {
  it('redirects, meta refresh, script navigation, form posts, subresources, popups and frames send nothing to another origin', async ({
    site,
    agent,
    owner,
    other,
  }) => {
    const run = await newRun({ owner, site }, 'visit hostile pages');
    const blocked: BlockedRequest[] = [];
    try {
      for (const mode of ['meta-refresh', 'script-navigation', 'form-post', 'subresources', 'popup', 'frame', 'top-navigation-from-frame']) {
        const page = await open(agent, run, site.url(`confinement/hostile.html?mode=${mode}&to=${encodeURIComponent(other.origin)}`));
        const later = await observeAfterAMoment(agent, run);
        expect(later.url, mode).toBe(page.url);
        blocked.push(...(page.blocked ?? []), ...(later.blocked ?? []));
      }
      const redirected = await agent.propose(
        run.id,
        'browser.navigate',
        { url: site.url(`redirect?to=${encodeURIComponent(`${other.origin}/landed`)}`) },
        '1.3.0',
      );
      expect(redirected.body).toMatchObject({ state: 'failed', error: { code: 'navigation_failed' } });
      expect(other.connections()).toBe(0);
      expect(new Set(blocked.map((entry) => entry.kind))).toEqual(new Set(['navigation', 'form', 'subresource', 'popup', 'frame']));
      expect(blocked.every((entry) => entry.origin === other.origin)).toBe(true);
    } finally {
      await agent.report(run.id, 'completed', 'visited').catch(() => undefined);
    }
  });

  it("a page cannot reach the host's own WebSocket port or the edge", async ({ stack, site, agent, owner }) => {
    const run = await newRun({ owner, site }, 'probe the host and the edge');
    try {
      const hostOrigin = stack.hostUrl.replace(/^ws:/, 'http:');
      for (const target of [hostOrigin, stack.edgeUrl]) {
        const page = await open(agent, run, site.url(`confinement/hostile.html?mode=subresources&to=${encodeURIComponent(target)}`));
        const later = await observeAfterAMoment(agent, run);
        expect([...(page.blocked ?? []), ...(later.blocked ?? [])], target).toContainEqual(
          expect.objectContaining({ origin: new URL(target).origin, kind: 'subresource', reason: 'forbidden_address' }),
        );
      }
    } finally {
      await agent.report(run.id, 'completed', 'probed').catch(() => undefined);
    }
  });

  it('a pinned 1.2.0 call never sees the 1.3.0 fields', async ({ site, agent, owner, other }) => {
    const run = await newRun({ owner, site }, 'old client');
    try {
      const answer = await agent.propose(
        run.id,
        'browser.navigate',
        { url: site.url(`confinement/frames.html?foreign=${encodeURIComponent(other.origin)}`) },
        '1.2.0',
      );
      const observation = observationOf(answer.body);
      for (const field of ['blocked', 'dialogs', 'frames']) expect(observation).not.toHaveProperty(field);
      expect(observation.snapshot).not.toContain('Inside foreign frame');
    } finally {
      await agent.report(run.id, 'completed', 'read').catch(() => undefined);
    }
  });
});

describe('approvals bound to what the owner saw', () => {
  it('the owner reads the target in words; a page that relabels and rewires the button meanwhile ends target_changed and nothing runs', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await newRun({ owner, site }, 'save my draft');
    try {
      const page = await open(agent, run, site.url('confinement/relabel.html?rewire_after_ms=3000'));
      const proposal = await agent.propose(
        run.id,
        'browser.act',
        { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Save draft') },
        '1.3.0',
      );
      expect(proposal.status).toBe(202);
      const pending = (await owner.pendingApprovals()).find((approval) => approval.tool_call_id === proposal.body.id);
      expect(pending?.summary).toBe(`Click the button "Save draft" on "Drafts" (${site.url('confinement/relabel.html?rewire_after_ms=3000')})`);
      expect(pending?.target).toMatchObject({ role: 'button', name: 'Save draft', frame_origin: site.origin, page_title: 'Drafts' });
      // The page rewires the button while the owner reads (3 s after its load: the open and the
      // proposal must come before, on a machine that may be running another stack beside this one).
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const decided = await owner.decide(pending!.id, 'approve');
      expect(decided.tool_call).toMatchObject({ state: 'failed', error: { code: 'target_changed' } });
      expect(site.hits('delete')).toBe(0);
      expect(site.hits('save')).toBe(0);
    } finally {
      await agent.report(run.id, 'failed', 'the button changed').catch(() => undefined);
    }
  });
});

describe('a page that fights back leaves the profile usable', () => {
  it("a beforeunload page: the page's own navigation is refused and reported; a new run's navigation works", async ({ site, agent, owner }) => {
    const first = await newRun({ owner, site }, 'leave an unsaved page', 'fights');
    const page = await open(agent, first, site.url('dialogs/unsaved.html'));
    const clicked = await approvedAct({ agent, owner }, first, {
      action: 'click',
      revision: page.revision,
      reference: refOf(page.snapshot, 'link', 'Leave this page'),
    });
    expect(clicked.state).toBe('succeeded');
    expect(observationOf(clicked).dialogs).toContainEqual(expect.objectContaining({ type: 'beforeunload', answer: 'dismissed' }));
    await agent.report(first.id, 'completed', 'stayed');
    const second = await newRun({ owner, site }, 'carry on', 'fights');
    try {
      await usable({ site, agent, owner }, second);
    } finally {
      await agent.report(second.id, 'completed', 'carried on').catch(() => undefined);
    }
  });

  it('an alert loop ends the page, reported; the next call works', async ({ site, agent, owner }) => {
    const run = await newRun({ owner, site }, 'survive an alert loop', 'fights');
    try {
      const looped = await agent.propose(run.id, 'browser.navigate', { url: site.url('dialogs/alert-loop.html') }, '1.3.0');
      expect(looped.body.state, JSON.stringify(looped.body.error)).toBe('failed');
      // The next observation says what happened: the alerts, and the page the host closed.
      const next = await open(agent, run, site.url('quiet.html'));
      expect(next.dialogs ?? [], JSON.stringify(looped.body.error)).toContainEqual(expect.objectContaining({ type: 'alert', answer: 'page_closed' }));
      await usable({ site, agent, owner }, run);
    } finally {
      await agent.report(run.id, 'completed', 'survived').catch(() => undefined);
    }
  });

  it('a click that hangs the main thread fails within the tool deadline; the next call works', async ({ site, agent, owner }) => {
    const run = await newRun({ owner, site }, 'survive a hung page', 'fights');
    try {
      const page = await open(agent, run, site.url('hangs-on-click.html?hang_ms=60000'));
      const hung = await approvedAct({ agent, owner }, run, {
        action: 'click',
        revision: page.revision,
        reference: refOf(page.snapshot, 'button', 'Archive everything'),
      });
      expect(hung).toMatchObject({ state: 'uncertain', error: { code: 'outcome_unknown' } });
      await usable({ site, agent, owner }, run);
    } finally {
      await agent.report(run.id, 'uncertain', 'the page hung').catch(() => undefined);
    }
  });

  it('a crashed renderer is replaced; the next call works', async ({ stack, site, agent, owner }) => {
    const run = await newRun({ owner, site }, 'survive a crash', 'crashes');
    try {
      // (Not a URL that contains the one `usable` opens: navigating to a URL a page result showed asks the owner.)
      const page = await open(agent, run, site.url('confinement/relabel.html'));
      const [owned] = await stack.queryD1(`SELECT owner_id FROM runs WHERE id = '${run.id}'`);
      await crashPage(stack.profilesDir, await hostProfileId(String(owned?.[0]?.owner_id), 'crashes'), site.url('confinement/relabel.html'));
      const stale = await agent.propose(
        run.id,
        'browser.act',
        { action: 'click', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Save draft') },
        '1.3.0',
      );
      if (stale.status === 202) {
        const pending = (await owner.pendingApprovals()).find((approval) => approval.tool_call_id === stale.body.id);
        expect((await owner.decide(pending!.id, 'approve')).tool_call).toMatchObject({ state: 'failed', error: { code: 'page_changed' } });
      }
      await usable({ site, agent, owner }, run);
    } finally {
      await agent.report(run.id, 'completed', 'survived').catch(() => undefined);
    }
  });
});
