import { describe, expect } from 'vitest';
import { observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { MAX_RUN_FILE_BYTES, type ObservedDownload } from '../../shared/run-files.ts';
import { actApproved, artifactBytes, attachFile, finish, observePage, openPage, proposalOutcome, runArtifacts } from '../support/hands.ts';
import { stackTest } from '../support/stack-fixture.ts';
import { until } from '../support/until.ts';

// Files through the HTTP API, end to end (issue 33): the owner attaches a file to a run and an
// upload act names it by id (never a path); a file the page downloads is kept in the run's
// artifacts, reported in the next observation. Real edge (wrangler dev), real host (Chromium).

const it = stackTest({ headless: true });

const RECEIPT = { name: 'receipt.txt', mime_type: 'text/plain', bytes: Buffer.from('Receipt 2026-12-06: 3 oat milk, 4.50 EUR\n') };

describe('upload', () => {
  it('sets the file input to the attached file: the approval names the file, its size and type; the page reads that name and size', async ({
    site,
    agent,
    owner,
  }) => {
    const run = await owner.createRun({ profile_id: 'hands-upload', intent: 'attach my receipt', origins: [site.origin] });
    try {
      const attached = await attachFile(owner, run.id, RECEIPT);
      expect(attached).toMatchObject({ run_id: run.id, name: 'receipt.txt', mime_type: 'text/plain', bytes: RECEIPT.bytes.length });
      const page = await openPage(agent, run.id, site.url('e2e-hands/upload.html'));
      const input = refOf(page.snapshot, 'button', 'Receipt');
      const uploaded = await actApproved({ agent, owner }, run.id, {
        action: 'upload',
        revision: page.revision,
        reference: input,
        file_id: attached.id,
        postcondition: { success: { kind: 'text', text: `Chosen: receipt.txt (${RECEIPT.bytes.length} bytes)` } },
      });
      expect(uploaded.approval?.summary).toBe(
        `Upload the file "receipt.txt" (${RECEIPT.bytes.length} bytes, text/plain) into the button "Receipt" on "Receipts" (${site.url('e2e-hands/upload.html')})`,
      );
      expect(uploaded.approval?.target?.file).toEqual({ id: attached.id, name: 'receipt.txt', bytes: RECEIPT.bytes.length, mime_type: 'text/plain' });
      expect(uploaded.call.state, JSON.stringify(uploaded.call.error)).toBe('succeeded');
      expect(observationOf(uploaded.call).condition?.status).toBe('satisfied');
    } finally {
      await finish(agent, run);
    }
  });

  it("an upload can only name a file attached to its own run: an unknown id and another run's file are invalid_arguments, and the input stays empty", async ({
    site,
    agent,
    owner,
  }) => {
    const other = await owner.createRun({ profile_id: 'hands-upload-other', intent: 'keep my receipt', origins: [site.origin] });
    const run = await owner.createRun({ profile_id: 'hands-upload-own', intent: 'attach a receipt', origins: [site.origin] });
    try {
      const othersFile = await attachFile(owner, other.id, RECEIPT);
      const page = await openPage(agent, run.id, site.url('e2e-hands/upload.html'));
      const input = refOf(page.snapshot, 'button', 'Receipt');
      for (const fileId of ['file_neverattached0001', othersFile.id]) {
        const refused = await proposalOutcome(agent, run.id, 'browser.act', { action: 'upload', revision: page.revision, reference: input, file_id: fileId });
        expect(refused, fileId).toMatchObject({ status: 400, code: 'invalid_arguments' });
      }
      // A path is no file id at all.
      const path = await proposalOutcome(agent, run.id, 'browser.act', { action: 'upload', revision: page.revision, reference: input, file_id: '/etc/passwd' });
      expect(path).toMatchObject({ status: 400, code: 'invalid_arguments' });
      expect((await owner.pendingApprovals()).filter((approval) => approval.run_id === run.id)).toEqual([]);
      expect((await observePage(agent, run.id)).snapshot).toContain('No file chosen');
    } finally {
      await finish(agent, other);
      await finish(agent, run);
    }
  });
});

describe('downloads', () => {
  /** The downloads the act's observation and the observations after it report, until one is named `name` (at most 10 s). */
  async function downloadNamed(agent: Parameters<typeof observePage>[0], runId: string, first: ObservedDownload[], name: string): Promise<ObservedDownload> {
    const seen = [...first];
    return until(
      async () => {
        const found = seen.find((download) => download.file_name === name);
        if (found) return found;
        seen.push(...((await observePage(agent, runId)).downloads ?? []));
        return undefined;
      },
      () => `a download named ${name} (seen: ${JSON.stringify(seen)})`,
      10_000,
      250,
    );
  }

  it("a file the page downloads is kept in the run's artifacts with its size, and reported in the next observation", async ({ site, agent, owner }) => {
    const run = await owner.createRun({ profile_id: 'hands-download', intent: 'get the report', origins: [site.origin] });
    try {
      const page = await openPage(agent, run.id, site.url('e2e-hands/download.html'));
      const clicked = await actApproved({ agent, owner }, run.id, {
        action: 'click',
        revision: page.revision,
        reference: refOf(page.snapshot, 'link', 'Download report'),
      });
      expect(clicked.call.state, JSON.stringify(clicked.call.error)).toBe('succeeded');
      const download = await downloadNamed(agent, run.id, observationOf(clicked.call).downloads ?? [], 'report.csv');
      expect(download).toMatchObject({ file_name: 'report.csv', bytes: 1234, state: 'saved', artifact_id: expect.any(String) });
      const artifacts = await runArtifacts(owner, run.id);
      expect(artifacts).toContainEqual(
        expect.objectContaining({ id: download.artifact_id, run_id: run.id, kind: 'download', name: 'report.csv', mime_type: 'text/csv', bytes: 1234 }),
      );
      // The agent lists the same artifacts, and the bytes are the server's.
      expect((await runArtifacts(agent, run.id)).map((artifact) => artifact.id)).toContain(download.artifact_id);
      const served = Buffer.from(await (await fetch(site.url('download?name=report.csv&type=text/csv&bytes=1234'))).arrayBuffer());
      expect((await artifactBytes(owner, run.id, download.artifact_id!)).bytes.equals(served)).toBe(true);
    } finally {
      await finish(agent, run);
    }
  });

  it('a download over the size cap is reported too_large and not kept', async ({ site, agent, owner }) => {
    const run = await owner.createRun({ profile_id: 'hands-download-large', intent: 'get the big report', origins: [site.origin] });
    try {
      const bytes = MAX_RUN_FILE_BYTES + 1024;
      const page = await openPage(agent, run.id, site.url(`e2e-hands/download.html?bytes=${bytes}`));
      const clicked = await actApproved({ agent, owner }, run.id, {
        action: 'click',
        revision: page.revision,
        reference: refOf(page.snapshot, 'link', 'Download report'),
      });
      expect(clicked.call.state, JSON.stringify(clicked.call.error)).toBe('succeeded');
      const download = await downloadNamed(agent, run.id, observationOf(clicked.call).downloads ?? [], 'report.csv');
      expect(download.state).toBe('too_large');
      expect(download.artifact_id).toBeUndefined();
      expect((await runArtifacts(owner, run.id)).filter((artifact) => artifact.kind === 'download')).toEqual([]);
    } finally {
      await finish(agent, run);
    }
  });
});
