import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { type FixtureServer, startFixtureServer } from '../support/fixture-server.ts';
import { actApproved, artifactBytes, finish, HANDS_VERSION, observePage, openPage, proposalOutcome, runArtifacts } from '../support/hands.ts';
import { stackTest } from '../support/stack-fixture.ts';

// Pictures, points and history through the HTTP API, end to end (issue 33): an observe may carry a
// viewport screenshot; an act may name a point of it instead of a reference, which the host
// hit-tests to the element there; back, forward and reload are navigations decided on the entry
// they land on. Two fixture origins: the file's site and `other`.

const it = stackTest({ headless: true }).extend('other', { scope: 'file' }, async ({}, { onCleanup }): Promise<FixtureServer> => {
  const other = await startFixtureServer();
  onCleanup(() => other.close());
  return other;
});

// e2e-hands/pinboard.html places its buttons at fixed CSS px of the viewport: "Pin note" spans
// x 40-200, y 40-80; "Delete note" x 400-560; the frame x 40-360, y 200-360; nothing at (900, 600).
const PIN_NOTE = { x: 120, y: 60 };
const IN_FRAME = { x: 200, y: 280 };
const NOTHING = { x: 900, y: 600 };

describe('screenshots and points', () => {
  it("an observe with screenshot carries a JPEG of the viewport, kept in the run's artifacts; a point on it clicks the element there, approved in its words", async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-points', intent: 'pin my note', origins: [site.origin] });
    try {
      await openPage(agent, run.id, site.url('e2e-hands/pinboard.html'));
      const seen = await observePage(agent, run.id, { screenshot: true });
      expect(seen.screenshot).toMatchObject({ mime_type: 'image/jpeg', width: expect.any(Number), height: expect.any(Number) });
      const picture = seen.screenshot!;
      expect(picture.width).toBeGreaterThan(NOTHING.x);
      expect(picture.height).toBeGreaterThan(NOTHING.y);
      const stored = await artifactBytes(agent, run.id, picture.artifact_id);
      expect(stored.bytes.subarray(0, 3).toString('hex')).toBe('ffd8ff');
      expect(stored.bytes.length).toBe(picture.bytes);
      expect(await runArtifacts(owner, run.id)).toContainEqual(
        expect.objectContaining({ id: picture.artifact_id, kind: 'observation_screenshot', mime_type: 'image/jpeg', bytes: picture.bytes }),
      );

      const clicked = await actApproved({ agent, owner }, run.id, {
        action: 'click',
        revision: seen.revision,
        point: PIN_NOTE,
        postcondition: { success: { kind: 'text', text: 'Pinned' } },
      });
      expect(clicked.approval?.target).toMatchObject({
        reference: refOf(seen.snapshot, 'button', 'Pin note'),
        role: 'button',
        name: 'Pin note',
        point: PIN_NOTE,
      });
      expect(clicked.approval?.summary).toBe(
        `Click the button "Pin note" (the point 120,60 of the page's picture) on "Pinboard" (${site.url('e2e-hands/pinboard.html')})`,
      );
      expect(clicked.call.state, JSON.stringify(clicked.call.error)).toBe('succeeded');
      expect(observationOf(clicked.call).condition?.status).toBe('satisfied');
      expect(site.hits('pin')).toBe(1);
      expect(site.hits('delete-note')).toBe(0);
    } finally {
      await finish(agent, run);
    }
  });

  it('a point outside the picture or on nothing actionable is invalid_arguments, and a point of an older revision is stale; nothing is asked or clicked', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-points-bad', intent: 'pin my note', origins: [site.origin] });
    try {
      const pinned = site.hits('pin');
      const opened = await openPage(agent, run.id, site.url('e2e-hands/pinboard.html'));
      const seen = await observePage(agent, run.id, { screenshot: true });
      const picture = seen.screenshot!;
      const click = (revision: number, point: { x: number; y: number }) => proposalOutcome(agent, run.id, 'browser.act', { action: 'click', revision, point });
      expect(await click(seen.revision, { x: picture.width + 5, y: 10 })).toMatchObject({ status: 400, code: 'invalid_arguments' });
      expect(await click(seen.revision, { x: 10, y: picture.height + 5 })).toMatchObject({ status: 400, code: 'invalid_arguments' });
      expect(await click(seen.revision, NOTHING)).toMatchObject({ status: 400, code: 'invalid_arguments' });
      // Reloading makes a new revision: the old picture's points are stale.
      const reloaded = await proposalOutcome(agent, run.id, 'browser.navigate', { history: 'reload' });
      expect(reloaded.call?.state, JSON.stringify(reloaded)).toBe('succeeded');
      expect(await click(opened.revision, PIN_NOTE)).toMatchObject({ status: 409, code: 'stale_revision' });
      expect((await owner.pendingApprovals()).filter((approval) => approval.run_id === run.id)).toEqual([]);
      expect(site.hits('pin')).toBe(pinned);
    } finally {
      await finish(agent, run);
    }
  });

  it('a point on a frame of an origin outside the run is denied like its reference would be: nothing is asked, nothing reaches the frame', async ({
    site,
    other,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-points-frame', intent: 'pin my note', origins: [site.origin] });
    try {
      await openPage(agent, run.id, site.url(`e2e-hands/pinboard.html?frame=${encodeURIComponent(other.origin)}`));
      const seen = await observePage(agent, run.id, { screenshot: true });
      expect(seen.frames).toContainEqual(expect.objectContaining({ origin: other.origin, withheld: true }));
      const denied = await proposalOutcome(agent, run.id, 'browser.act', { action: 'click', revision: seen.revision, point: IN_FRAME });
      expect(denied).toMatchObject({ status: 403, code: 'policy_denied' });
      expect((await owner.pendingApprovals()).filter((approval) => approval.run_id === run.id)).toEqual([]);
      expect(other.hits('buy')).toBe(0);
    } finally {
      await finish(agent, run);
    }
  });
});

describe('history', () => {
  const stop = (server: FixtureServer, name: string) => server.url(`e2e-hands/page.html?name=${name}`);

  it("back, forward and reload move through the tab's history across the run's two origins, each landing where it was decided", async ({
    site,
    other,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-history', intent: 'go back and forth', origins: [site.origin, other.origin] });
    try {
      await openPage(agent, run.id, stop(site, 'one'));
      await openPage(agent, run.id, stop(other, 'two'));
      const move = async (history: string) => {
        const answer = await agent.propose(run.id, 'browser.navigate', { history }, HANDS_VERSION);
        return observationOf(answer.body);
      };
      expect(await move('back')).toMatchObject({ url: stop(site, 'one'), title: 'Stop one' });
      expect(await move('forward')).toMatchObject({ url: stop(other, 'two'), title: 'Stop two' });
      expect(await move('reload')).toMatchObject({ url: stop(other, 'two'), title: 'Stop two' });
    } finally {
      await finish(agent, run);
    }
  });

  it("back onto an entry outside the run's origins is refused like a navigation there, and the tab stays where it is", async ({ other, agent, owner }) => {
    // The same browser profile as the run before (same tab): its history holds that run's pages
    // of both origins and the blank page its end left; this run may go only to `other`.
    const run = await owner.createRun({ profile_id: 'hands-history', intent: 'go back', origins: [other.origin] });
    try {
      await openPage(agent, run.id, stop(other, 'three'));
      await openPage(agent, run.id, stop(other, 'four'));
      // Back within the run's origins moves ...
      const within = await proposalOutcome(agent, run.id, 'browser.navigate', { history: 'back' });
      expect(within.call?.state, JSON.stringify(within)).toBe('succeeded');
      expect(observationOf(within.call!)).toMatchObject({ url: stop(other, 'three'), title: 'Stop three' });
      // ... back once more would leave them: refused, nothing moves.
      const outside = await proposalOutcome(agent, run.id, 'browser.navigate', { history: 'back' });
      expect(outside).toMatchObject({ status: 403, code: 'policy_denied' });
      expect(await observePage(agent, run.id)).toMatchObject({ url: stop(other, 'three'), title: 'Stop three' });
    } finally {
      await finish(agent, run);
    }
  });
});
