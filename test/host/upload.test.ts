import { describe, expect } from 'vitest';
import { refOf } from '../../scripts/aria-refs.ts';
import type { Observation } from '../../shared/observation.ts';
import type { UploadFile } from '../../shared/protocol.ts';
import type { HostClient } from '../support/host-client.ts';
import { hostTest } from '../support/host-fixture.ts';

const test = hostTest();

function navigate(client: HostClient, leaseId: string, url: string): Promise<Observation> {
  return client.call('page.navigate', { lease_id: leaseId, url, timeout_ms: 15_000 });
}

const CONTENT = 'name,amount\nAda,42\n';
const FILE: UploadFile = {
  file_id: 'file_report12345',
  name: 'report.csv',
  mime_type: 'text/csv',
  data_base64: Buffer.from(CONTENT).toString('base64'),
};

describe('upload', () => {
  test("an upload sets the attached file on the file input: the page shows the file's name, size and type", async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/upload.html'));
    // A file input's role in the snapshot is a button named by its label.
    const input = refOf(page.snapshot, 'button', 'Attachment');
    const after = await client.call('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'upload', revision: page.revision, reference: input, file_id: FILE.file_id },
      target: { role: 'button', name: 'Attachment', frame_origin: fixtures.origin },
      file: FILE,
      timeout_ms: 15_000,
    });
    expect(after.revision).toBe(page.revision + 1);
    expect(after.snapshot).toContain(`Chosen report.csv, ${Buffer.byteLength(CONTENT)} bytes, text/csv`);
  });

  test('an upload without the file is invalid_params and sets nothing', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/upload.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'upload', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Attachment'), file_id: FILE.file_id },
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'invalid_params' } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('No file chosen');
  });

  test('a file sent with another act, or naming another file than the upload, is invalid_params and nothing is sent', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/upload.html'));
    const notes = refOf(page.snapshot, 'textbox', 'Notes');
    const typed = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'type', revision: page.revision, reference: notes, text: 'hello' },
      file: FILE,
      timeout_ms: 15_000,
    });
    expect(typed).toMatchObject({ error: { code: 'invalid_params' } });
    const other = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'upload', revision: page.revision, reference: refOf(page.snapshot, 'button', 'Attachment'), file_id: 'file_another12345' },
      file: FILE,
      timeout_ms: 15_000,
    });
    expect(other).toMatchObject({ error: { code: 'invalid_params' } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('No file chosen');
    expect(now.snapshot).toContain('Notes changed 0');
  });

  test('an upload on an element that is not a file input is action_failed and sends nothing to it', async ({ client, lease, fixtures }) => {
    const page = await navigate(client, lease.lease_id, fixtures.url('hands/upload.html'));
    const response = await client.request('page.act', {
      lease_id: lease.lease_id,
      action: { action: 'upload', revision: page.revision, reference: refOf(page.snapshot, 'textbox', 'Notes'), file_id: FILE.file_id },
      target: { role: 'textbox', name: 'Notes', frame_origin: fixtures.origin },
      file: FILE,
      timeout_ms: 15_000,
    });
    expect(response).toMatchObject({ error: { code: 'action_failed', message: expect.stringContaining('not a file input') } });
    const now = await client.call('page.observe', { lease_id: lease.lease_id, timeout_ms: 15_000 });
    expect(now.snapshot).toContain('Notes changed 0');
    expect(now.snapshot).toContain('No file chosen');
  });
});
