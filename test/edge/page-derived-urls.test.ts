import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import type { Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { RunView } from '../../shared/api.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// Page-derived navigation targets are decided on canonical URLs (README "Taint"): a URL a page
// showed needs the owner however the agent writes it, and the URLs that are the run's own (its
// navigation targets, the pages it was on) never do. The host is a stand-in; D1 is real.

const ORIGIN = 'http://127.0.0.1:8123';
const OFFERS = `${ORIGIN}/offers`;

const parties = partiesForEachTest();

/** A page of `url` whose content shows a relative link to /target, a link to itself and an absolute URL in its text. */
function pageAt(url: string, revision: number) {
  return {
    ...hostPage(url, revision),
    title: 'Offers',
    snapshot: [
      '- main [ref=e1]:',
      '  - link "Best offer" [ref=e2]:',
      '    - /url: /target',
      '  - link "This page" [ref=e3]:',
      `    - /url: ${new URL(url).pathname}`,
      `  - paragraph [ref=e4]: "Also see ${ORIGIN}/promo."`,
    ].join('\n'),
  };
}

/** A stand-in host: observe shows the offers page, or the next of `observed` (given a revision); navigate loads whatever it is sent. */
function offersHost(observed: ((revision: number) => Record<string, unknown>)[] = []) {
  let revision = 0;
  return scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_pagederived1', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return (observed.shift() ?? ((next: number) => pageAt(OFFERS, next)))(++revision);
      case 'page.navigate':
        return pageAt(String(params.url), ++revision);
      default:
        return { released: true };
    }
  });
}

/** A run the owner created (the agent's turn has the owner's authority), its turn tainted by one observe of the offers page. */
async function observedRun(host: ReturnType<typeof offersHost>) {
  const ports: Ports = workerdPorts(host.connector);
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: 'offers', intent: 'compare offers', origins: [ORIGIN] },
  });
  expect(created.status).toBe(201);
  const runOf = () => loadRun(ports, agent, created.body.id);
  const navigate = async (url: string) => proposeToolCall(ports, agent, await runOf(), { tool: 'browser.navigate', version: '1.3.0', arguments: { url } });
  return { runOf, navigate, observe: async () => proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.3.0', arguments: {} }) };
}

/** The owner denies a parked proposal, so the run takes the next one; the proposal's phases. */
async function deniedAfterAsking(proposal: Awaited<ReturnType<typeof proposeToolCall>>) {
  if (proposal.approvalId !== null) {
    await call('POST', `/v1/approvals/${proposal.approvalId}/decision`, { token: parties.owner.token, body: { decision: 'deny' } });
  }
  return proposal.call.phases;
}

describe('a URL a page showed needs the owner, however it is written', () => {
  it.each([
    ['the resolved relative link', `${ORIGIN}/target`],
    ['with a fragment', `${ORIGIN}/target#x`],
    ['with an empty query', `${ORIGIN}/target?`],
    ['in upper case with the default port', 'HTTP://127.0.0.1:8123/target'],
    ['written in page text', `${ORIGIN}/promo`],
  ])('%s (%s)', async (_case, url) => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.observe();
    const proposal = await run.navigate(url);
    expect(proposal.status).toBe(202);
    expect(proposal.call.phases).toMatchObject({ decision: { effect: 'approval', overlay: 'external_untrusted', tainted: true } });
    expect(host.calls.some((entry) => entry.method === 'page.navigate')).toBe(false);
  });
});

describe('what a page cannot do to the record', () => {
  it("it cannot make a URL the run's own by setting its own URL (replaceState) and then linking to it", async () => {
    const transfer = `${ORIGIN}/transfer?to=mallory`;
    const host = offersHost([
      (revision) => ({ ...pageAt(transfer, revision), snapshot: '- main [ref=e1]' }),
      (revision) => ({ ...pageAt(OFFERS, revision), snapshot: `- link "Claim" [ref=e2]:\n  - /url: /transfer?to=mallory` }),
    ]);
    const run = await observedRun(host);
    await run.observe();
    await run.observe();
    const proposal = await run.navigate(transfer);
    expect(proposal.call.phases).toMatchObject({ decision: { effect: 'approval', overlay: 'external_untrusted' } });
  });

  it('it cannot push a URL out of the record with thousands of decoy links', async () => {
    const decoys = Array.from({ length: 2100 }, (_, index) => `  - link "d${index}" [ref=e${index + 10}]:\n    - /url: /decoy/${index}`).join('\n');
    const host = offersHost([(revision) => ({ ...pageAt(OFFERS, revision), snapshot: `- main [ref=e1]:\n${decoys}\n  - text: ${ORIGIN}/payload` })]);
    const run = await observedRun(host);
    await run.observe();
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/payload`))).toMatchObject({ decision: { effect: 'approval' } });
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/anything-else`))).toMatchObject({ decision: { effect: 'approval' } });
  });

  it('a URL in a dialog message or the title is page content too', async () => {
    const host = offersHost([
      (revision) => ({
        ...pageAt(OFFERS, revision),
        title: `Moved to ${ORIGIN}/from-title`,
        dialogs: [{ type: 'alert', message: `Open ${ORIGIN}/from-dialog now`, answer: 'accepted', at: new Date().toISOString() }],
      }),
    ]);
    const run = await observedRun(host);
    await run.observe();
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/from-dialog`))).toMatchObject({ decision: { effect: 'approval' } });
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/from-title`))).toMatchObject({ decision: { effect: 'approval' } });
  });
});

describe("the run's own URLs are never page-derived", () => {
  it('navigating again to the page the run is on, which links to itself, runs without the owner', async () => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.observe();
    const first = await run.navigate(`${ORIGIN}/settings`);
    expect(first.call.phases).toMatchObject({ decision: { effect: 'allow' } });
    const again = await run.navigate(`${ORIGIN}/settings`);
    expect(again.status).toBe(200);
    expect(again.call.phases).toMatchObject({ decision: { effect: 'allow', tainted: true } });
    expect(again.call.state).toBe('succeeded');
  });

  it('the URL the observed page shows for itself is not page-derived: navigating back to it asks nobody', async () => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.observe();
    const back = await run.navigate(`${OFFERS}#top`);
    expect(back.call.phases).toMatchObject({ decision: { effect: 'allow' } });
  });
});

describe('the host loads the URL policy decided on', () => {
  it('is sent the parsed href, never the raw string', async () => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.navigate(' HTTP://127.0.0.1:8123/settings?#section ');
    expect(host.calls.find((entry) => entry.method === 'page.navigate')?.params).toMatchObject({ url: `${ORIGIN}/settings#section` });
  });
});

describe('after a sign-in', () => {
  /** The run's sign-in at `protectedUrl`: an episode and the run's wait, both resolved (as a verified ceremony leaves them). */
  async function resolvedSignIn(runId: string, protectedUrl: string, waitState: 'resolved' | 'fenced' = 'resolved') {
    const suffix = runId.slice(-12);
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO sign_in_episodes (id, owner_id, profile_id, host_profile_id, origin, generation, ceremony_id, state, question, sign_in_url, protected_url, opened_at, resolved_at)
         VALUES (?, ?, 'offers', 'hp', ?, 1, ?, 'resolved', 'q', ?, ?, 1, 2)`,
      ).bind(`sie_${suffix}`, parties.owner.id, ORIGIN, `cer_${suffix}`, `${ORIGIN}/login`, protectedUrl),
      env.DB.prepare(
        `INSERT INTO sign_in_waits (id, run_id, episode_id, owner_id, host_profile_id, origin, question, generation, tool_call_id, state, created_at)
         VALUES (?, ?, ?, ?, 'hp', ?, 'q', 1, 'call_x', ?, 1)`,
      ).bind(`siw_${suffix}`, runId, `sie_${suffix}`, parties.owner.id, ORIGIN, waitState),
    ]);
  }

  it("the page the run's resolved sign-in was verified against is the run's own: going back there after the sign-in asks nobody", async () => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.observe();
    await resolvedSignIn((await run.runOf()).id, `${ORIGIN}/target`);
    const back = await run.navigate(`${ORIGIN}/target`);
    expect(back.status).toBe(200);
    expect(back.call.phases).toMatchObject({ decision: { effect: 'allow', tainted: true } });
    // Only that page: another link the page showed still needs the owner.
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/promo`))).toMatchObject({ decision: { effect: 'approval', overlay: 'external_untrusted' } });
  });

  it('a sign-in that did not resolve for the run (its wait fenced) makes nothing its own', async () => {
    const host = offersHost();
    const run = await observedRun(host);
    await run.observe();
    await resolvedSignIn((await run.runOf()).id, `${ORIGIN}/target`, 'fenced');
    expect(await deniedAfterAsking(await run.navigate(`${ORIGIN}/target`))).toMatchObject({ decision: { effect: 'approval', overlay: 'external_untrusted' } });
  });
});
