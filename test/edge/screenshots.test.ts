import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../edge/app.ts';
import { keepScreenshot, pruneArtifacts } from '../../edge/artifacts/screenshots.ts';
import { HostCallError } from '../../edge/host/host-session.ts';
import { DEFAULT_EDGE_CONFIG, type Ports } from '../../edge/ports.ts';
import type { RunView } from '../../shared/api.ts';
import { backgroundSettled, partiesForEachTest, workerdPorts } from './support/edge-client.ts';
import { hostPage, scriptedHost } from './support/fake-host.ts';

// Screenshots for the owner's console on the Workers app over the real D1 and the real (local) R2
// binding; the host is a stand-in that answers `page.screenshot` with a JPEG's bytes.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8126';
const EDGE = 'http://127.0.0.1:8787';

/** A JPEG's bytes as the host sends them (base64): start and end markers around a marked body. */
function jpegOf(marker: number): string {
  return btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, marker, marker, marker, 0xff, 0xd9));
}

interface PictureAsked {
  lease_id: string;
  revision: number;
  reference?: string;
}

function screenshotApp(
  options: { config?: Partial<Ports['config']>; refuse?: string; box?: { x: number; y: number; width: number; height: number } | null } = {},
) {
  let revision = 0;
  const asked: PictureAsked[] = [];
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_pictures0001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.screenshot') {
      const request = params as unknown as PictureAsked;
      asked.push(request);
      if (options.refuse) throw new HostCallError(options.refuse as 'lease_lost', 'refused by the stand-in');
      return {
        revision: request.revision,
        jpeg_base64: jpegOf(request.revision),
        width: 1280,
        height: 720,
        taken_at_ms: Date.now(),
        box: request.reference ? (options.box === undefined ? { x: 240, y: 180, width: 200, height: 80 } : options.box) : null,
      };
    }
    if (method.startsWith('page.')) return { ...hostPage(`${ORIGIN}/pay`, ++revision), snapshot: '- button "Send payment" [ref=e2]' };
    return { released: true };
  });
  const ports = (): Ports => ({ ...workerdPorts(host.connector), config: { ...DEFAULT_EDGE_CONFIG, ...options.config } });
  const app = createApp(ports);
  const request = (method: string, path: string, init: { token?: string; json?: unknown; cookie?: string; form?: Record<string, string> } = {}) =>
    app.request(`${EDGE}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}),
        ...(init.cookie ? { Cookie: init.cookie } : {}),
        ...(init.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(init.form ? { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE } : {}),
      },
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
      ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
    });
  return { request, asked, ports, revision: () => revision };
}

async function sessionCookie(request: ReturnType<typeof screenshotApp>['request'], token: string): Promise<string> {
  const answer = await request('POST', '/console/sign-in', { form: { token } });
  expect(answer.status).toBe(303);
  return (answer.headers.get('Set-Cookie') ?? '').split(';')[0]!;
}

/** A run that navigated (a picture after it) and then proposed a click the policy parks. */
async function parkedClick(app: ReturnType<typeof screenshotApp>) {
  const created = await app.request('POST', '/v1/runs', {
    token: parties.owner.token,
    json: { profile_id: 'pay', intent: 'Pay the invoice', origins: [ORIGIN] },
  });
  const run = (await created.json()) as RunView;
  const propose = (tool: string, args: unknown) =>
    app.request('POST', `/v1/runs/${run.id}/tool-calls`, { token: parties.agent.token, json: { tool, version: '1.4.0', arguments: args } });
  const navigated = (await (await propose('browser.navigate', { url: `${ORIGIN}/pay` })).json()) as { id: string; result: unknown };
  const parked = await propose('browser.act', { action: 'click', revision: app.revision(), reference: 'e2' });
  expect(parked.status).toBe(202);
  await backgroundSettled();
  return { run, navigated, parked: (await parked.json()) as { id: string; approval_id: string } };
}

async function artifactRows(runId: string) {
  const { results } = await env.DB.prepare('SELECT id, tool_call_id, kind, store_key, bytes, box FROM artifacts WHERE run_id = ? ORDER BY created_at')
    .bind(runId)
    .all<{ id: string; tool_call_id: string; kind: string; store_key: string; bytes: number; box: string | null }>();
  return results;
}

describe('screenshots of the owner', () => {
  it('keep the page after a navigation and, when an act parks, the page at its revision with the target box, in R2; the agent sees none of it', async () => {
    const app = screenshotApp();
    const { run, navigated, parked } = await parkedClick(app);
    expect(app.asked).toEqual([
      { lease_id: 'lease_pictures0001', revision: 1, timeout_ms: expect.any(Number) },
      { lease_id: 'lease_pictures0001', revision: 1, reference: 'e2', timeout_ms: expect.any(Number) },
    ]);
    const rows = await artifactRows(run.id);
    expect(rows.map((row) => [row.tool_call_id, row.kind])).toEqual([
      [navigated.id, 'after'],
      [parked.id, 'parked'],
    ]);
    expect(JSON.parse(rows[1]!.box!)).toEqual({ x: 240, y: 180, width: 200, height: 80 });
    for (const row of rows) {
      const object = await env.ARTIFACTS.get(row.store_key);
      expect(object?.httpMetadata?.contentType).toBe('image/jpeg');
      expect(new Uint8Array(await object!.arrayBuffer()).byteLength).toBe(row.bytes);
    }
    // The agent's call is exactly what it was: no picture, no key, no box.
    const view = JSON.stringify(await (await app.request('GET', `/v1/tool-calls/${navigated.id}`, { token: parties.agent.token })).json());
    expect(view).not.toMatch(/jpeg|screenshot|artifact|store_key/i);
  });

  it("serve the inbox's picture with the outline where the box is, to its owner only", async () => {
    const app = screenshotApp();
    const { run, parked } = await parkedClick(app);
    const cookie = await sessionCookie(app.request, parties.owner.token);
    const inbox = await (await app.request('GET', '/console/inbox', { cookie })).text();
    const [, pictureId] = /<img src="\/console\/screenshots\/(art_[a-z2-7]+)" width="1280" height="720"/.exec(inbox) ?? [];
    expect(pictureId).toBeDefined();
    expect(inbox).toContain('<svg viewBox="0 0 1280 720"');
    expect(inbox).toContain('<rect class="target-outline" x="240" y="180" width="200" height="80">');
    expect(inbox).toContain('the button &quot;Send payment&quot; is outlined');
    const image = await app.request('GET', `/console/screenshots/${pictureId}`, { cookie });
    expect(image.status).toBe(200);
    expect(image.headers.get('Content-Type')).toBe('image/jpeg');
    expect(new Uint8Array(await image.arrayBuffer()).slice(0, 2)).toEqual(new Uint8Array([0xff, 0xd8]));
    // Another owner's session, and no session at all, get nothing.
    const stranger = await sessionCookie(app.request, parties.strangerOwner.token);
    expect((await app.request('GET', `/console/screenshots/${pictureId}`, { cookie: stranger })).status).toBe(404);
    expect((await app.request('GET', `/console/screenshots/${pictureId}`)).status).toBe(303);
    // The run's timeline shows the picture after the navigation as a thumbnail.
    const timeline = await (await app.request('GET', `/console/runs/${run.id}`, { cookie })).text();
    expect(timeline).toMatch(/<img class="thumbnail" src="\/console\/screenshots\/art_[a-z2-7]+"/);
    expect(parked.approval_id).toMatch(/^apr_/);
  });

  it('leave the call without a picture, and nothing stored, when the host cannot picture the page', async () => {
    const app = screenshotApp({ refuse: 'lease_lost' });
    const { run } = await parkedClick(app);
    expect(app.asked).toHaveLength(2);
    expect(await artifactRows(run.id)).toEqual([]);
    const cookie = await sessionCookie(app.request, parties.owner.token);
    expect(await (await app.request('GET', '/console/inbox', { cookie })).text()).toContain('No picture of the page yet.');
  });

  it("are trimmed to the owner's newest ARTIFACT_MAX_PER_OWNER, objects and rows alike", async () => {
    const app = screenshotApp({ config: { artifactMaxPerOwner: 2 } });
    const { run } = await parkedClick(app);
    const ports = app.ports();
    for (const revision of [2, 3]) {
      await keepScreenshot(ports, {
        ownerId: parties.owner.id,
        runId: run.id,
        toolCallId: `call_extra${revision}`,
        kind: 'after',
        leaseId: 'lease_pictures0001',
        hostUrl: 'ws://127.0.0.1:8790',
        revision,
      });
    }
    const kept = await artifactRows(run.id);
    expect(kept.map((row) => row.tool_call_id)).toEqual(['call_extra2', 'call_extra3']);
    const listed = await env.ARTIFACTS.list({ prefix: `screenshots/${parties.owner.id}/${run.id}/` });
    expect(listed.objects.map((object) => object.key).sort()).toEqual(kept.map((row) => row.store_key).sort());
  });

  it('older than ARTIFACT_MAX_AGE_HOURS are removed by the cron pass, objects and rows', async () => {
    const app = screenshotApp({ config: { artifactMaxAgeMs: 3_600_000 } });
    const { run } = await parkedClick(app);
    const rows = await artifactRows(run.id);
    expect(rows).toHaveLength(2);
    const ports = app.ports();
    expect(await pruneArtifacts(ports, Date.now())).toBe(0);
    expect(await pruneArtifacts(ports, Date.now() + 3_600_000 + 60_000)).toBeGreaterThanOrEqual(2);
    expect(await artifactRows(run.id)).toEqual([]);
    for (const row of rows) expect(await env.ARTIFACTS.get(row.store_key)).toBeNull();
  });

  it('are kept once per call and kind, however often the task runs', async () => {
    const app = screenshotApp();
    const { run, parked } = await parkedClick(app);
    const ports = app.ports();
    const again = {
      ownerId: parties.owner.id,
      runId: run.id,
      toolCallId: parked.id,
      kind: 'parked' as const,
      leaseId: 'lease_pictures0001',
      hostUrl: 'ws://127.0.0.1:8790',
      revision: 1,
      reference: 'e2',
    };
    await keepScreenshot(ports, again);
    expect((await artifactRows(run.id)).filter((row) => row.tool_call_id === parked.id)).toHaveLength(1);
    const listed = await env.ARTIFACTS.list({ prefix: `screenshots/${parties.owner.id}/${run.id}/` });
    expect(listed.objects).toHaveLength(2);
  });

  it('are removed by the hundreds: retention deletes more than D1 binds in one statement (100), objects and rows', async () => {
    const app = screenshotApp({ config: { artifactMaxAgeMs: 3_600_000 } });
    const { run } = await parkedClick(app);
    const old = Date.now() - 2 * 3_600_000;
    const keys: string[] = [];
    for (let index = 0; index < 150; index++) {
      const key = `screenshots/${parties.owner.id}/${run.id}/art_old${String(index).padStart(4, '0')}.jpg`;
      keys.push(key);
      await env.ARTIFACTS.put(key, new Uint8Array([0xff, 0xd8, 0xff, 0xd9]));
      await env.DB.prepare(
        "INSERT INTO artifacts (id, owner_id, run_id, tool_call_id, kind, store_key, bytes, width, height, box, created_at) VALUES (?, ?, ?, ?, 'after', ?, 4, 1280, 720, NULL, ?)",
      )
        .bind(`art_old${index}`, parties.owner.id, run.id, `call_old${index}`, key, old + index)
        .run();
    }
    expect(await pruneArtifacts(app.ports(), Date.now())).toBe(150);
    expect((await artifactRows(run.id)).map((row) => row.kind)).toEqual(['after', 'parked']);
    for (const key of keys.slice(0, 3).concat(keys.slice(-3))) expect(await env.ARTIFACTS.get(key)).toBeNull();
  });

  it('say so when the target could not be found on the picture (no box, or an empty one), rather than drawing or claiming an outline', async () => {
    for (const box of [null, { x: 40, y: 40, width: 0, height: 0 }]) {
      const app = screenshotApp({ box });
      await parkedClick(app);
      const cookie = await sessionCookie(app.request, parties.owner.token);
      const inbox = await (await app.request('GET', '/console/inbox', { cookie })).text();
      expect(inbox).toContain('the button &quot;Send payment&quot; could not be found on it');
      expect(inbox).not.toContain('<rect');
      const picture = /\/console\/screenshots\/(art_[a-z2-7]+)/.exec(inbox)?.[1];
      const image = await app.request('GET', `/console/screenshots/${picture}`, { cookie });
      expect(image.headers.get('Cache-Control')).toBe('private, no-store');
      await env.DB.prepare("UPDATE runs SET state = 'cancelled' WHERE owner_id = ?").bind(parties.owner.id).run();
    }
  });
});
