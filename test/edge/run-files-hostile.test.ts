import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { ErrorBody } from '../../shared/errors.ts';
import { MAX_RUN_FILES, type RunFileView } from '../../shared/run-files.ts';
import { backgroundSettled, partiesForEachTest } from './support/edge-client.ts';
import { filesApp } from './support/files-app.ts';

// Hostile input against a run's files and artifacts (issue 33): every malformed body, wrong
// owner, wrong shape of id and race is a typed 4xx that changes nothing, never a 5xx.

const parties = partiesForEachTest();

async function fileCount(runId: string): Promise<number> {
  const row = await env.DB.prepare('SELECT count(*) AS n FROM run_files WHERE run_id = ?').bind(runId).first<{ n: number }>();
  return row?.n ?? 0;
}

async function storedObjects(ownerId: string, runId: string): Promise<number> {
  return (await env.ARTIFACTS.list({ prefix: `files/${ownerId}/${runId}/` })).objects.length;
}

describe('attaching a file with hostile input', () => {
  it('answers every malformed body with a typed 4xx and keeps nothing', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const post = (json: unknown) => files.request<ErrorBody>('POST', `/v1/runs/${run.id}/files`, { token: parties.owner.token, json });
    const body = (name: unknown, data: unknown = 'aGk=', mime: unknown = 'text/plain') => ({ name, mime_type: mime, data_base64: data });
    const answers = [
      await post(body('a.txt', 'not base64!')),
      await post(body('a.txt', 'aGk')),
      await post(body('a.txt', 'aG k=')),
      await post(body('a.txt', 42)),
      await post(body('a.txt', 'aGk=', 'TEXT/PLAIN')),
      await post(body('a.txt', 'aGk=', 'text/plain; charset=utf-8')),
      await post(body('a\u0000b.txt')),
      await post(body('dir/a.txt')),
      await post(body('dir\\a.txt')),
      await post(body('')),
      await post(body('..')),
      await post(body('x'.repeat(256))),
      await post(body('a\u0085b.txt')),
      await post(body('invoice\u202efdp.exe')),
      await post(body('a\u2028b.txt')),
      await post(body('\ud800.txt')),
      await post({ ...body('a.txt'), extra: true }),
      await post([body('a.txt')]),
      await post(null),
    ];
    expect(answers.map((answer) => [answer.status, answer.body?.error?.code])).toEqual(answers.map(() => [400, 'invalid_request']));
    expect(await fileCount(run.id)).toBe(0);
    expect(await storedObjects(parties.owner.id, run.id)).toBe(0);
  });

  it('refuses a body that is not JSON, or not declared JSON, with a typed 4xx', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const raw = async (contentType: string | undefined, body: BodyInit) => {
      const response = await files.app.request(`http://127.0.0.1:8787/v1/runs/${run.id}/files`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${parties.owner.token}`, ...(contentType ? { 'Content-Type': contentType } : {}) },
        body,
      });
      return [response.status, ((await response.json()) as ErrorBody).error.code];
    };
    const good = JSON.stringify({ name: 'a.txt', mime_type: 'text/plain', data_base64: 'aGk=' });
    const form = new FormData();
    form.set('name', 'a.txt');
    const answers = [
      await raw('application/json', '{"name": "a.txt", '),
      await raw('text/plain', good),
      await raw(undefined, good),
      await raw(undefined, form),
    ];
    for (const [status] of answers) expect(status).toBeGreaterThanOrEqual(400);
    for (const [status] of answers) expect(status).toBeLessThan(500);
    expect(await fileCount(run.id)).toBe(0);
  });

  it('keeps an empty file and a name of exactly 255 characters, with unicode', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const empty = await files.request<RunFileView>('POST', `/v1/runs/${run.id}/files`, {
      token: parties.owner.token,
      json: { name: 'empty.txt', mime_type: 'text/plain', data_base64: '' },
    });
    expect([empty.status, empty.body.bytes]).toEqual([201, 0]);
    const name = `${'é'.repeat(250)}.pdf`;
    const long = await files.attach<RunFileView>(run.id, name, 'x');
    expect([long.status, long.body.name]).toEqual([201, name]);
  });

  it('holds the 8-file limit when 12 attaches race: 8 kept, 4 too_many_files, no orphaned object', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const answers = await Promise.all(Array.from({ length: 12 }, (_, index) => files.attach<ErrorBody>(run.id, `race-${index}.txt`, `race ${index}`)));
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array(MAX_RUN_FILES).fill(201), ...Array(12 - MAX_RUN_FILES).fill(409)]);
    for (const refused of answers.filter((answer) => answer.status === 409)) expect(refused.body.error.code).toBe('too_many_files');
    expect(await fileCount(run.id)).toBe(MAX_RUN_FILES);
    expect(await storedObjects(parties.owner.id, run.id)).toBe(MAX_RUN_FILES);
  });
});

describe("an owner's artifacts past ARTIFACT_MAX_PER_OWNER", () => {
  it("are the oldest observation screenshots: an agent's screenshots never evict a page's downloads", async () => {
    const files = filesApp(parties, { config: { artifactMaxPerOwner: 2 } });
    const run = await files.navigatedRun();
    files.reportDownloads([{ download_id: 'dl_keepsake0001', file_name: 'invoice.pdf', state: 'saved', bytes: new TextEncoder().encode('%PDF') }]);
    expect((await files.propose(run.id, 'browser.observe', {})).status).toBe(200);
    for (let index = 0; index < 4; index++) expect((await files.propose(run.id, 'browser.observe', { screenshot: true })).status).toBe(200);
    await backgroundSettled();
    const { results } = await env.DB.prepare('SELECT kind, name, store_key FROM run_artifacts WHERE run_id = ? ORDER BY created_at')
      .bind(run.id)
      .all<{ kind: string; name: string; store_key: string }>();
    expect(results.filter((row) => row.kind === 'download').map((row) => row.name)).toEqual(['invoice.pdf']);
    expect(results.filter((row) => row.kind === 'observation_screenshot')).toHaveLength(2);
    const download = results.find((row) => row.kind === 'download')!;
    expect(await (await env.ARTIFACTS.get(download.store_key))?.text()).toBe('%PDF');
  });
});

describe("a page's download of HTML", () => {
  it('is served by the API and the console sandboxed, never under the console policy that lets its own scripts run', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const page = new TextEncoder().encode('<script src="/console/runs/x/artifacts/y"></script>');
    files.reportDownloads([{ download_id: 'dl_hostilehtml1', file_name: 'report.html', mime_type: 'text/html', state: 'saved', bytes: page }]);
    expect((await files.propose(run.id, 'browser.observe', {})).status).toBe(200);
    const download = await env.DB.prepare("SELECT id, mime_type FROM run_artifacts WHERE run_id = ? AND kind = 'download'")
      .bind(run.id)
      .first<{ id: string; mime_type: string }>();
    expect(download?.mime_type).toBe('text/html');
    const EDGE = 'http://127.0.0.1:8787';
    const signedIn = await files.app.request(`${EDGE}/console/sign-in`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: EDGE },
      body: new URLSearchParams({ token: parties.owner.token }).toString(),
    });
    const cookie = (signedIn.headers.get('Set-Cookie') ?? '').split(';')[0]!;
    const viaConsole = await files.app.request(`${EDGE}/console/runs/${run.id}/artifacts/${download!.id}`, { headers: { Cookie: cookie } });
    const viaApi = await files.request('GET', `/v1/runs/${run.id}/artifacts/${download!.id}`, { token: parties.owner.token });
    for (const headers of [viaConsole.headers, viaApi.headers]) {
      expect(headers.get('Content-Security-Policy')).toBe('sandbox');
      expect(headers.get('Content-Disposition')).toMatch(/^attachment; /);
      expect(headers.get('X-Content-Type-Options')).toBe('nosniff');
    }
  });
});

describe('removing a file', () => {
  it('twice at once removes it once: one 200, one not_found', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(run.id, 'twice.txt', 'twice', parties.owner.token, 'text/plain');
    const path = `/v1/runs/${run.id}/files/${attached.body.id}`;
    const answers = await Promise.all([0, 1, 2].map(() => files.request<ErrorBody>('DELETE', path, { token: parties.owner.token })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404, 404]);
    expect(await fileCount(run.id)).toBe(0);
    expect(await storedObjects(parties.owner.id, run.id)).toBe(0);
  });
});

describe("another owner's and another run's ids", () => {
  it('are not_found for files and artifacts, whatever their shape, and change nothing', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const sibling = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(sibling.id, 'sibling.txt', 'sibling', parties.owner.token, 'text/plain');
    const observed = await files.propose<{ result: { screenshot?: { artifact_id: string } } }>(sibling.id, 'browser.observe', { screenshot: true });
    const artifactId = observed.body.result.screenshot!.artifact_id;
    const owner = parties.owner.token;
    const shapes = ['x', 'file_', '%00', '..%2F..%2Fetc', 'é', 'a'.repeat(80), encodeURIComponent("' OR 1=1 --")];
    const answers = [
      await files.request<ErrorBody>('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: owner }),
      await files.request<ErrorBody>('GET', `/v1/runs/${run.id}/artifacts/${artifactId}`, { token: owner }),
      await files.request<ErrorBody>('GET', `/v1/runs/${sibling.id}/artifacts/${artifactId}`, { token: parties.strangerOwner.token }),
      await files.request<ErrorBody>('GET', `/v1/runs/${sibling.id}/artifacts/${artifactId}`, { token: parties.strangerAgent.token }),
      await files.request<ErrorBody>('DELETE', `/v1/runs/${sibling.id}/files/${attached.body.id}`, { token: parties.strangerOwner.token }),
      ...(await Promise.all(shapes.map((id) => files.request<ErrorBody>('DELETE', `/v1/runs/${run.id}/files/${id}`, { token: owner })))),
      ...(await Promise.all(shapes.map((id) => files.request<ErrorBody>('GET', `/v1/runs/${run.id}/artifacts/${id}`, { token: owner })))),
      ...(await Promise.all(shapes.map((id) => files.request<ErrorBody>('GET', `/v1/runs/${id}/files`, { token: owner })))),
    ];
    // A run id longer than ids are is a malformed path (400); every other answer is not_found.
    expect(answers.map((answer) => answer.body.error.code)).toEqual(answers.map((answer) => (answer.status === 400 ? 'invalid_request' : 'not_found')));
    expect(answers.filter((answer) => answer.status === 400)).toHaveLength(1);
    expect(await fileCount(sibling.id)).toBe(1);
    const tooLong = await files.request<ErrorBody>('GET', `/v1/runs/${run.id}/artifacts/${'a'.repeat(81)}`, { token: owner });
    expect([tooLong.status, tooLong.body.error.code]).toEqual([400, 'invalid_request']);
  });
});
