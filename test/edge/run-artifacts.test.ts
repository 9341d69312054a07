import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { pruneRunArtifacts } from '../../edge/artifacts/run-artifacts.ts';
import { pruneRunFiles } from '../../edge/artifacts/run-files.ts';
import type { ToolCallView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import type { Observation } from '../../shared/observation.ts';
import { MAX_RUN_DOWNLOADS, type RunArtifactList, type RunFileView } from '../../shared/run-files.ts';
import { partiesForEachTest } from './support/edge-client.ts';
import { filesApp, jpegOf } from './support/files-app.ts';

// What a run's pages give it (issue 33) on the Workers app over the real D1 and local R2: the
// screenshot an observe asks for and the files a page downloads become run artifacts, reported
// in the observation, listed and served as attachments to the owner and the run's agents, over
// MCP as an image block, and removed by retention.

const parties = partiesForEachTest();

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function artifactRows(runId: string) {
  const { results } = await env.DB.prepare('SELECT id, kind, tool_call_id, name, bytes, store_key FROM run_artifacts WHERE run_id = ? ORDER BY created_at, id')
    .bind(runId)
    .all<{ id: string; kind: string; tool_call_id: string; name: string; bytes: number; store_key: string }>();
  return results;
}

describe('an observation screenshot', () => {
  it('is asked of the host, kept as a run artifact, and returned as ObservationScreenshot; the artifact route serves the JPEG to the agent as an attachment', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const observed = await files.propose<ToolCallView>(run.id, 'browser.observe', { screenshot: true });
    expect(observed.status).toBe(200);
    expect(files.calls.find((sent) => sent.method === 'page.observe')?.params).toMatchObject({ screenshot: true });
    const result = observed.body.result as Observation;
    const [row] = await artifactRows(run.id);
    expect(result.screenshot).toEqual({ artifact_id: row!.id, mime_type: 'image/jpeg', width: 800, height: 600, bytes: 9 });
    expect(row).toMatchObject({ kind: 'observation_screenshot', tool_call_id: observed.body.id, bytes: 9 });
    // The host's wire form never reaches the agent.
    expect(JSON.stringify(observed.body)).not.toMatch(/viewport_jpeg|data_base64/);

    const listed = await files.request<RunArtifactList>('GET', `/v1/runs/${run.id}/artifacts`, { token: parties.agent.token });
    expect(listed.body.artifacts).toEqual([
      {
        id: row!.id,
        run_id: run.id,
        kind: 'observation_screenshot',
        call_id: observed.body.id,
        name: `page-revision-${result.revision}.jpg`,
        mime_type: 'image/jpeg',
        bytes: 9,
        created_at: expect.any(String),
      },
    ]);
    const served = await files.request('GET', `/v1/runs/${run.id}/artifacts/${row!.id}`, { token: parties.agent.token });
    expect(served.status).toBe(200);
    expect(served.headers.get('Content-Type')).toBe('image/jpeg');
    expect(served.headers.get('Content-Disposition')).toBe(
      `attachment; filename="page-revision-${result.revision}.jpg"; filename*=UTF-8''page-revision-${result.revision}.jpg`,
    );
    expect(served.headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(btoa(String.fromCharCode(...served.bytes))).toBe(jpegOf(result.revision));
    // Another owner's agent learns nothing of it.
    for (const path of [`/v1/runs/${run.id}/artifacts`, `/v1/runs/${run.id}/artifacts/${row!.id}`]) {
      const refused = await files.request<ErrorBody>('GET', path, { token: parties.strangerAgent.token });
      expect([refused.status, refused.body.error.code]).toEqual([404, 'not_found']);
    }
  });

  it('is not taken, nor anything kept, when the observe does not ask for it', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const plain = await files.propose<ToolCallView>(run.id, 'browser.observe', {});
    expect((plain.body.result as Observation).screenshot).toBeUndefined();
    expect(files.calls.filter((sent) => sent.method === 'page.observe').map((sent) => sent.params.screenshot)).toEqual([undefined]);
    expect(await artifactRows(run.id)).toEqual([]);
  });

  it('comes over MCP as an image content block besides the text', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const observed = await files.propose<ToolCallView>(run.id, 'browser.observe', { screenshot: true });
    const revision = (observed.body.result as Observation).revision;
    const answer = await files.app.request('http://127.0.0.1:8787/mcp', {
      method: 'POST',
      headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'call_status', arguments: { call_id: observed.body.id } } }),
    });
    const body = (await answer.json()) as { result: { content: { type: string; text?: string; data?: string; mimeType?: string }[] } };
    expect(body.result.content.map((block) => block.type)).toEqual(['text', 'image']);
    expect(body.result.content[1]).toEqual({ type: 'image', data: jpegOf(revision), mimeType: 'image/jpeg' });
    // browser_observe offers `screenshot` and answers with the picture of the revision it read.
    const mcp = async (method: string, params: unknown) =>
      (await (
        await files.app.request('http://127.0.0.1:8787/mcp', {
          method: 'POST',
          headers: { authorization: `Bearer ${parties.agent.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 2, method, params }),
        })
      ).json()) as { result: Record<string, unknown> };
    const tools = (await mcp('tools/list', {})).result.tools as { name: string; inputSchema: { properties: Record<string, unknown> } }[];
    expect(tools.find((tool) => tool.name === 'browser_observe')?.inputSchema.properties.screenshot).toEqual({ type: 'boolean' });
    const viaMcp = (await mcp('tools/call', { name: 'browser_observe', arguments: { run_id: run.id, screenshot: true } })).result as typeof body.result;
    expect(viaMcp.content.at(-1)).toEqual({ type: 'image', data: jpegOf(files.revision()), mimeType: 'image/jpeg' });
  });
});

describe("a page's downloads", () => {
  it("are read from the host, kept as the run's artifacts with their size, never opened, and reported in the observation", async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const report = bytesOf('col1,col2\n1,2\n');
    files.reportDownloads([
      { download_id: 'dl_report00001', file_name: 'report.csv', mime_type: 'text/csv', state: 'saved', bytes: report },
      { download_id: 'dl_hugefile001', file_name: 'huge.iso', state: 'too_large', bytes: new Uint8Array(0) },
    ]);
    const observed = await files.propose<ToolCallView>(run.id, 'browser.observe', {});
    const [row] = await artifactRows(run.id);
    expect((observed.body.result as Observation).downloads).toEqual([
      { artifact_id: row!.id, file_name: 'report.csv', mime_type: 'text/csv', bytes: report.byteLength, state: 'saved' },
      { file_name: 'huge.iso', bytes: 0, state: 'too_large' },
    ]);
    expect(files.calls.filter((sent) => sent.method === 'page.download').map((sent) => sent.params.download_id)).toEqual(['dl_report00001']);
    const listed = await files.request<RunArtifactList>('GET', `/v1/runs/${run.id}/artifacts`, { token: parties.owner.token });
    expect(listed.body.artifacts.map(({ kind, name, bytes, mime_type }) => ({ kind, name, bytes, mime_type }))).toEqual([
      { kind: 'download', name: 'report.csv', bytes: report.byteLength, mime_type: 'text/csv' },
    ]);
    const served = await files.request('GET', `/v1/runs/${run.id}/artifacts/${row!.id}`, { token: parties.agent.token });
    expect(served.headers.get('Content-Type')).toBe('text/csv');
    expect(served.headers.get('Content-Disposition')).toMatch(/^attachment; /);
    expect(new TextDecoder().decode(served.bytes)).toBe('col1,col2\n1,2\n');
  });

  it(`are kept at most ${MAX_RUN_DOWNLOADS} per run: later ones are not_kept and not read`, async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    for (let index = 0; index < MAX_RUN_DOWNLOADS - 1; index++) {
      await env.DB.prepare(
        "INSERT INTO run_artifacts (id, owner_id, run_id, tool_call_id, kind, name, mime_type, store_key, bytes, created_at) VALUES (?, ?, ?, NULL, 'download', 'old.bin', 'application/octet-stream', ?, 1, ?)",
      )
        .bind(`art_earlier${index}`, parties.owner.id, run.id, `downloads/${parties.owner.id}/${run.id}/art_earlier${index}.bin`, Date.now())
        .run();
    }
    files.reportDownloads([
      { download_id: 'dl_lastroom001', file_name: 'last.txt', state: 'saved', bytes: bytesOf('last') },
      { download_id: 'dl_noroom00001', file_name: 'over.txt', state: 'saved', bytes: bytesOf('over') },
    ]);
    const observed = await files.propose<ToolCallView>(run.id, 'browser.observe', {});
    expect((observed.body.result as Observation).downloads?.map((download) => [download.file_name, download.state])).toEqual([
      ['last.txt', 'saved'],
      ['over.txt', 'not_kept'],
    ]);
    expect(files.calls.filter((sent) => sent.method === 'page.download').map((sent) => sent.params.download_id)).toEqual(['dl_lastroom001']);
    expect((await artifactRows(run.id)).filter((row) => row.kind === 'download')).toHaveLength(MAX_RUN_DOWNLOADS);
  });

  it('and screenshots and attached files older than ARTIFACT_MAX_AGE_HOURS are removed by retention, objects and rows', async () => {
    const files = filesApp(parties, { config: { artifactMaxAgeMs: 3_600_000 } });
    const run = await files.navigatedRun();
    files.reportDownloads([{ download_id: 'dl_retained001', file_name: 'a.txt', state: 'saved', bytes: bytesOf('a') }]);
    await files.propose(run.id, 'browser.observe', { screenshot: true });
    const attached = await files.attach<RunFileView>(run.id, 'b.txt', 'b', parties.owner.token, 'text/plain');
    const rows = await artifactRows(run.id);
    expect(rows.map((row) => row.kind).sort()).toEqual(['download', 'observation_screenshot']);
    const ports = files.ports();
    expect(await pruneRunArtifacts(ports, Date.now())).toBe(0);
    expect(await pruneRunFiles(ports, Date.now())).toBe(0);
    const later = Date.now() + 3_600_000 + 60_000;
    expect(await pruneRunArtifacts(ports, later)).toBeGreaterThanOrEqual(2);
    expect(await pruneRunFiles(ports, later)).toBeGreaterThanOrEqual(1);
    expect(await artifactRows(run.id)).toEqual([]);
    for (const row of rows) expect(await env.ARTIFACTS.get(row.store_key)).toBeNull();
    expect(await env.ARTIFACTS.get(`files/${parties.owner.id}/${run.id}/${attached.body.id}.bin`)).toBeNull();
  });
});

describe("the console's run page", () => {
  it("lets the owner attach a file with a form and shows the run's files and downloads with name and size", async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    files.reportDownloads([
      { download_id: 'dl_console0001', file_name: 'statement.pdf', mime_type: 'application/pdf', state: 'saved', bytes: bytesOf('%PDF-1') },
    ]);
    await files.propose(run.id, 'browser.observe', {});
    const EDGE = 'http://127.0.0.1:8787';
    const signedIn = await files.app.request(`${EDGE}/console/sign-in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE },
      body: new URLSearchParams({ token: parties.owner.token }).toString(),
    });
    const cookie = (signedIn.headers.get('Set-Cookie') ?? '').split(';')[0]!;
    const page = await (await files.app.request(`${EDGE}/console/runs/${run.id}`, { headers: { Cookie: cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1];
    expect(page).toContain(`action="/console/runs/${run.id}/files" enctype="multipart/form-data"`);
    const form = new FormData();
    form.set('csrf', csrf!);
    form.set('file', new File(['name,amount\nAda,12\n'], 'expenses.csv', { type: 'text/csv' }));
    const posted = await files.app.request(`${EDGE}/console/runs/${run.id}/files`, { method: 'POST', headers: { Cookie: cookie, Origin: EDGE }, body: form });
    expect([posted.status, posted.headers.get('Location')]).toEqual([303, `/console/runs/${run.id}`]);
    const listed = await files.request<{ files: RunFileView[] }>('GET', `/v1/runs/${run.id}/files`, { token: parties.agent.token });
    expect(listed.body.files.map(({ name, mime_type, bytes }) => ({ name, mime_type, bytes }))).toEqual([
      { name: 'expenses.csv', mime_type: 'text/csv', bytes: 19 },
    ]);
    const after = await (await files.app.request(`${EDGE}/console/runs/${run.id}`, { headers: { Cookie: cookie } })).text();
    expect(after).toContain('expenses.csv (text/csv, 19 bytes)');
    const [download] = (await artifactRows(run.id)).filter((row) => row.kind === 'download');
    expect(after).toContain(`<a href="/console/runs/${run.id}/artifacts/${download!.id}" download>statement.pdf</a> (application/pdf, 6 bytes)`);
    const saved = await files.app.request(`${EDGE}/console/runs/${run.id}/artifacts/${download!.id}`, { headers: { Cookie: cookie } });
    expect(saved.headers.get('Content-Disposition')).toMatch(/^attachment; filename="statement.pdf"/);
    expect(await saved.text()).toBe('%PDF-1');
    // A form without the session's CSRF token attaches nothing.
    const forged = new FormData();
    forged.set('csrf', 'not-the-token');
    forged.set('file', new File(['x'], 'forged.txt', { type: 'text/plain' }));
    const refused = await files.app.request(`${EDGE}/console/runs/${run.id}/files`, {
      method: 'POST',
      headers: { Cookie: cookie, Origin: EDGE },
      body: forged,
    });
    expect(refused.status).toBe(403);
    expect((await files.request<{ files: RunFileView[] }>('GET', `/v1/runs/${run.id}/files`, { token: parties.owner.token })).body.files).toHaveLength(1);
  });
});
