import { describe, expect, it } from 'vitest';
import { proposeToolCall } from '../../edge/pipeline/propose.ts';
import { edgeConfigFrom, type Ports } from '../../edge/ports.ts';
import { loadRun } from '../../edge/runs/lifecycle.ts';
import type { RunView } from '../../shared/api.ts';
import { call, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// A lease that meets a fresh browser (the host restarted, or its browser was reopened) sees an
// empty page: the observe says so (`page_changed`, retryable, navigate), and the empty page is
// never recorded as the run's page. The host is a stand-in; D1 is real.

const ORIGIN = 'http://127.0.0.1:8124';
const parties = partiesForEachTest();

/** A stand-in host whose browser is on `pageUrl()`; navigate moves it. */
function browserHost() {
  let revision = 0;
  let url = 'about:blank';
  const host = scriptedHost(async (method, params) => {
    switch (method) {
      case 'lease.acquire':
      case 'lease.renew':
        return { lease_id: 'lease_freshbrowser1', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
      case 'page.observe':
        return { ...hostPage(url, ++revision), ...(url === 'about:blank' ? { title: '', snapshot: '' } : {}) };
      case 'page.navigate':
        url = String(params.url);
        return hostPage(url, ++revision);
      default:
        return { released: true };
    }
  });
  return { ...host, restart: () => (url = 'about:blank') };
}

async function runOn(host: ReturnType<typeof browserHost>) {
  const ports: Ports = workerdPorts(host.connector);
  const agent = { id: parties.agent.id, kind: 'agent' as const, ownerId: parties.owner.id };
  const created = await call<RunView>('POST', '/v1/runs', {
    token: parties.owner.token,
    body: { profile_id: 'reports', intent: 'read the reports', origins: [ORIGIN] },
  });
  expect(created.status).toBe(201);
  const runOf = () => loadRun(ports, agent, created.body.id);
  return {
    runOf,
    navigate: async (url: string) => proposeToolCall(ports, agent, await runOf(), { tool: 'browser.navigate', version: '1.3.0', arguments: { url } }),
    observe: async () => proposeToolCall(ports, agent, await runOf(), { tool: 'browser.observe', version: '1.3.0', arguments: {} }),
  };
}

describe('a fresh browser (after a host restart)', () => {
  it("an observe of its empty page fails page_changed, retryable, naming the run's last page; the run's page is kept", async () => {
    const host = browserHost();
    const run = await runOn(host);
    expect((await run.navigate(`${ORIGIN}/reports`)).call.state).toBe('succeeded');
    host.restart();
    const observed = await run.observe();
    expect(observed.call).toMatchObject({ state: 'failed', errorCode: 'page_changed', retryable: true, result: null });
    expect(observed.call.errorMessage).toContain('navigate');
    expect(observed.call.errorMessage).toContain(`${ORIGIN}/reports`);
    expect(await run.runOf()).toMatchObject({ latestUrl: `${ORIGIN}/reports` });
  });

  it("navigating back to the run's own page then runs without asking the owner", async () => {
    const host = browserHost();
    const run = await runOn(host);
    await run.navigate(`${ORIGIN}/reports`);
    host.restart();
    await run.observe();
    const back = await run.navigate(`${ORIGIN}/reports`);
    expect(back.call.phases).toMatchObject({ decision: { effect: 'allow' } });
    expect(back.call.state).toBe('succeeded');
  });

  it('the first observe of a run that has not navigated yet says to navigate, and records no page', async () => {
    const host = browserHost();
    const run = await runOn(host);
    const observed = await run.observe();
    expect(observed.call).toMatchObject({ state: 'failed', errorCode: 'page_changed', retryable: true });
    expect(await run.runOf()).toMatchObject({ latestUrl: null });
  });
});

describe("the admission wait is the host's unless the edge asks for less", () => {
  it('without ADMISSION_WAIT_MS the edge sends no wait_ms, so HOST_ADMISSION_WAIT_MS applies', async () => {
    const host = browserHost();
    const run = await runOn(host);
    await run.navigate(`${ORIGIN}/reports`);
    const acquired = host.calls.find((entry) => entry.method === 'lease.acquire');
    expect(acquired?.params).not.toHaveProperty('wait_ms');
  });

  it('ADMISSION_WAIT_MS, when set, is what the edge asks for', () => {
    expect(edgeConfigFrom({ ADMISSION_WAIT_MS: '2000' }).admissionWaitMs).toBe(2000);
    expect(edgeConfigFrom({}).admissionWaitMs).toBeUndefined();
  });
});
