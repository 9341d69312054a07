import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import type { RunView, ToolCallView } from '../../shared/api.ts';
import type { ErrorBody } from '../../shared/errors.ts';
import { MAX_RUN_FILE_BYTES, MAX_RUN_FILES, type RunFileList, type RunFileView } from '../../shared/run-files.ts';
import { type ApprovalList, partiesForEachTest } from './support/edge-client.ts';
import { filesApp } from './support/files-app.ts';

// A run's attached files (issue 33) on the Workers app over the real D1 and local R2: the owner
// attaches and removes them, the run's agents list them, limits and strangers are typed 4xx with
// nothing changed, and an upload act names only one of this run's files.

const parties = partiesForEachTest();

async function fileRows(runId: string) {
  const { results } = await env.DB.prepare('SELECT id, name, bytes, store_key FROM run_files WHERE run_id = ? ORDER BY created_at')
    .bind(runId)
    .all<{ id: string; name: string; bytes: number; store_key: string }>();
  return results;
}

async function storedText(key: string): Promise<string | null> {
  const object = await env.ARTIFACTS.get(key);
  return object === null ? null : object.text();
}

describe('run files', () => {
  it('are attached by the owner, kept in R2, listed to the owner and the run agent, and removed by the owner, object and row', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(run.id, 'invoice.pdf', '%PDF-1.4 invoice');
    expect(attached.status).toBe(201);
    expect(attached.body).toEqual({
      id: expect.stringMatching(/^file_[a-z2-7]{20}$/),
      run_id: run.id,
      name: 'invoice.pdf',
      mime_type: 'application/pdf',
      bytes: 16,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      created_at: expect.any(String),
    });
    const [row] = await fileRows(run.id);
    expect(await storedText(row!.store_key)).toBe('%PDF-1.4 invoice');
    expect((await env.ARTIFACTS.head(row!.store_key))?.httpMetadata?.contentType).toBe('application/pdf');
    for (const token of [parties.owner.token, parties.agent.token]) {
      const listed = await files.request<RunFileList>('GET', `/v1/runs/${run.id}/files`, { token });
      expect(listed).toMatchObject({ status: 200, body: { files: [attached.body] } });
    }
    const removed = await files.request<RunFileView>('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: parties.owner.token });
    expect(removed).toMatchObject({ status: 200, body: attached.body });
    expect(await fileRows(run.id)).toEqual([]);
    expect(await storedText(row!.store_key)).toBeNull();
    const again = await files.request<ErrorBody>('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: parties.owner.token });
    expect([again.status, again.body.error.code]).toEqual([404, 'not_found']);
  });

  it("refuse agents' and strangers' writes and strangers' reads with typed 4xx, changing nothing", async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(run.id, 'notes.txt', 'hello', parties.owner.token, 'text/plain');
    const before = await fileRows(run.id);
    const refusals = [
      await files.attach<ErrorBody>(run.id, 'agent.txt', 'x', parties.agent.token),
      await files.attach<ErrorBody>(run.id, 'stranger.txt', 'x', parties.strangerOwner.token),
      await files.request<ErrorBody>('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: parties.agent.token }),
      await files.request<ErrorBody>('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: parties.strangerOwner.token }),
      await files.request<ErrorBody>('GET', `/v1/runs/${run.id}/files`, { token: parties.strangerAgent.token }),
      await files.request<ErrorBody>('GET', `/v1/runs/${run.id}/files`, { token: parties.operator.token }),
    ];
    expect(refusals.map((answer) => [answer.status, answer.body.error.code])).toEqual([
      [403, 'forbidden'],
      [404, 'not_found'],
      [403, 'forbidden'],
      [404, 'not_found'],
      [404, 'not_found'],
      [403, 'forbidden'],
    ]);
    expect(await fileRows(run.id)).toEqual(before);
  });

  it('are limited in size, count, name and to a run not finished: file_too_large, too_many_files, invalid_request, run_not_active, nothing kept', async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const tooLarge = await files.request<ErrorBody>('POST', `/v1/runs/${run.id}/files`, {
      token: parties.owner.token,
      json: { name: 'big.bin', mime_type: 'application/octet-stream', data_base64: btoa('x'.repeat(MAX_RUN_FILE_BYTES + 3)) },
    });
    expect([tooLarge.status, tooLarge.body.error.code]).toEqual([413, 'file_too_large']);
    const badName = await files.attach<ErrorBody>(run.id, '../etc/passwd', 'x');
    expect([badName.status, badName.body.error.code]).toEqual([400, 'invalid_request']);
    // Exactly the largest file is accepted.
    const largest = await files.request<RunFileView>('POST', `/v1/runs/${run.id}/files`, {
      token: parties.owner.token,
      json: { name: 'largest.bin', mime_type: 'application/octet-stream', data_base64: btoa('y'.repeat(MAX_RUN_FILE_BYTES)) },
    });
    expect([largest.status, largest.body.bytes]).toEqual([201, MAX_RUN_FILE_BYTES]);
    for (let index = 1; index < MAX_RUN_FILES; index++) expect((await files.attach(run.id, `page-${index}.txt`, `page ${index}`)).status).toBe(201);
    const ninth = await files.attach<ErrorBody>(run.id, 'ninth.txt', 'one too many');
    expect([ninth.status, ninth.body.error.code]).toEqual([409, 'too_many_files']);
    expect(await fileRows(run.id)).toHaveLength(MAX_RUN_FILES);
    const listed = await env.ARTIFACTS.list({ prefix: `files/${parties.owner.id}/${run.id}/` });
    expect(listed.objects).toHaveLength(MAX_RUN_FILES);

    const other = await files.navigatedRun();
    expect((await files.request('POST', `/v1/runs/${other.id}/cancel`, { token: parties.owner.token })).status).toBe(200);
    const ended = await files.attach<ErrorBody>(other.id, 'late.txt', 'too late');
    expect([ended.status, ended.body.error.code]).toEqual([409, 'run_not_active']);
    expect(await fileRows(other.id)).toEqual([]);
    expect((await env.ARTIFACTS.list({ prefix: `files/${parties.owner.id}/${other.id}/` })).objects).toEqual([]);
  });
});

describe('an upload act', () => {
  it("names only one of this run's attached files: another run's file or an unknown id is invalid_arguments and nothing is dispatched", async () => {
    const files = filesApp(parties);
    const otherRun = await files.navigatedRun();
    const run = await files.navigatedRun();
    const foreign = await files.attach<RunFileView>(otherRun.id, 'other.pdf', 'another run');
    const sent = files.calls.length;
    for (const fileId of [foreign.body.id, 'file_neverissued0000000']) {
      const refused = await files.propose<ErrorBody>(run.id, 'browser.act', { action: 'upload', revision: files.revision(), reference: 'e3', file_id: fileId });
      expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_arguments']);
      expect(refused.body.error.message).toContain(`${fileId} is not a file attached to this run`);
    }
    expect(files.calls.slice(sent)).toEqual([]);
    const stored = await env.DB.prepare("SELECT state, error_code FROM tool_calls WHERE run_id = ? AND tool = 'browser.act'")
      .bind(run.id)
      .all<{ state: string; error_code: string }>();
    expect(stored.results).toEqual([
      { state: 'rejected', error_code: 'invalid_arguments' },
      { state: 'rejected', error_code: 'invalid_arguments' },
    ]);
  });

  it("asks the owner in words that name the file, its size and type, and sends the host the file's bytes, never a path", async () => {
    const files = filesApp(parties);
    const run = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(run.id, 'invoice.pdf', '%PDF-1.4 invoice');
    const parked = await files.propose<ToolCallView>(run.id, 'browser.act', {
      action: 'upload',
      revision: files.revision(),
      reference: 'e3',
      file_id: attached.body.id,
    });
    expect(parked.status).toBe(202);
    const approvals = await files.request<ApprovalList>('GET', '/v1/approvals?state=pending', { token: parties.owner.token });
    const [approval] = approvals.body.approvals.filter((candidate) => candidate.run_id === run.id);
    expect(approval!.summary).toBe(
      `Upload the file "invoice.pdf" (16 bytes, application/pdf) into the button "Choose file" on "Reports" (${'http://127.0.0.1:8127'}/upload)`,
    );
    expect(approval!.target?.file).toEqual({ id: attached.body.id, name: 'invoice.pdf', bytes: 16, mime_type: 'application/pdf' });
    const decided = await files.request<{ tool_call: ToolCallView }>('POST', `/v1/approvals/${approval!.id}/decision`, {
      token: parties.owner.token,
      json: { decision: 'approve' },
    });
    expect(decided.body.tool_call.state).toBe('succeeded');
    const act = files.calls.find((sent) => sent.method === 'page.act');
    expect(act?.params.action).toEqual({ action: 'upload', revision: 1, reference: 'e3', file_id: attached.body.id });
    expect(act?.params.file).toEqual({ file_id: attached.body.id, name: 'invoice.pdf', mime_type: 'application/pdf', data_base64: btoa('%PDF-1.4 invoice') });
  });

  it('fails invalid_arguments at dispatch, sending nothing, when the owner removed the file after it was asked for', async () => {
    const files = filesApp(parties);
    const run: RunView = await files.navigatedRun();
    const attached = await files.attach<RunFileView>(run.id, 'draft.txt', 'draft', parties.owner.token, 'text/plain');
    const parked = await files.propose<ToolCallView>(run.id, 'browser.act', {
      action: 'upload',
      revision: files.revision(),
      reference: 'e3',
      file_id: attached.body.id,
    });
    expect(parked.status).toBe(202);
    expect((await files.request('DELETE', `/v1/runs/${run.id}/files/${attached.body.id}`, { token: parties.owner.token })).status).toBe(200);
    const approvals = await files.request<ApprovalList>('GET', '/v1/approvals?state=pending', { token: parties.owner.token });
    const approval = approvals.body.approvals.find((candidate) => candidate.run_id === run.id)!;
    const decided = await files.request<{ tool_call: ToolCallView }>('POST', `/v1/approvals/${approval.id}/decision`, {
      token: parties.owner.token,
      json: { decision: 'approve' },
    });
    expect(decided.body.tool_call).toMatchObject({ state: 'failed', error: { code: 'invalid_arguments' } });
    expect(files.calls.filter((sent) => sent.method === 'page.act')).toEqual([]);
  });
});
