import { expect } from 'vitest';
import { createApp } from '../../../edge/app.ts';
import { HostCallError } from '../../../edge/host/host-session.ts';
import { DEFAULT_EDGE_CONFIG, type Ports } from '../../../edge/ports.ts';
import type { RunView, ToolCallView } from '../../../shared/api.ts';
import type { Parties } from './edge-client.ts';
import { workerdPorts } from './edge-client.ts';
import { hostPage, scriptedHost } from './fake-host.ts';

/**
 * The Workers app over the real D1 and the real (local) R2 binding, with a stand-in host for a
 * run's files and pictures (issue 33): its pages show a file input, `page.observe` with
 * `screenshot` answers a JPEG (`viewport_jpeg`), and downloads it is told to report
 * (`reportDownloads`) come with the next page answer and are read back with `page.download`.
 */

/** The one origin of the runs here. */
export const FILES_ORIGIN = 'http://127.0.0.1:8127';
const EDGE = 'http://127.0.0.1:8787';

/** A JPEG's bytes (start and end markers around a marked body), base64. */
export function jpegOf(marker: number): string {
  return btoa(String.fromCharCode(0xff, 0xd8, 0xff, 0xe0, marker, marker, marker, 0xff, 0xd9));
}

/** A download the stand-in host reports: its wire entry and, when saved, its bytes. */
export interface StandInDownload {
  readonly download_id: string;
  readonly file_name: string;
  readonly mime_type?: string;
  readonly state: 'saved' | 'too_large' | 'failed';
  readonly bytes: Uint8Array;
}

export function filesApp(parties: Parties, options: { config?: Partial<Ports['config']> } = {}) {
  let revision = 0;
  let pending: StandInDownload[] = [];
  const downloads = new Map<string, StandInDownload>();
  const host = scriptedHost(async (method, params) => {
    if (method === 'lease.acquire' || method === 'lease.renew') {
      return { lease_id: 'lease_files0000001', profile_id: String(params.profile_id), generation: 1, expires_at_ms: Date.now() + 300_000 };
    }
    if (method === 'page.screenshot') throw new HostCallError('invalid_params', 'no console pictures from this stand-in');
    if (method === 'page.download') {
      const download = downloads.get(String(params.download_id));
      if (download === undefined) throw new Error(`unknown download ${String(params.download_id)}`);
      downloads.delete(download.download_id);
      const { bytes, ...wire } = download;
      return { ...wire, bytes: bytes.byteLength, data_base64: btoa(String.fromCharCode(...bytes)) };
    }
    if (method === 'page.observe' || method === 'page.navigate' || method === 'page.act') {
      const page = { ...hostPage(`${FILES_ORIGIN}/upload`, ++revision), snapshot: '- main [ref=e1]:\n  - button "Choose file" [ref=e3]' };
      const reported = pending.map(({ bytes, ...wire }) => ({ ...wire, bytes: bytes.byteLength }));
      for (const download of pending) downloads.set(download.download_id, download);
      pending = [];
      return {
        ...page,
        ...(params.screenshot === true ? { viewport_jpeg: { mime_type: 'image/jpeg', width: 800, height: 600, data_base64: jpegOf(revision) } } : {}),
        ...(reported.length > 0 ? { downloaded_files: reported } : {}),
      };
    }
    return { released: true };
  });
  const ports = (): Ports => ({ ...workerdPorts(host.connector), config: { ...DEFAULT_EDGE_CONFIG, ...options.config } });
  const app = createApp(ports);

  /** One request to the app; the status, headers and body (JSON when it is JSON). */
  async function request<Body = unknown>(method: string, path: string, init: { token?: string; json?: unknown } = {}) {
    const response = await app.request(`${EDGE}${path}`, {
      method,
      headers: {
        ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}),
        ...(init.json !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      body = undefined;
    }
    return { status: response.status, headers: response.headers, body: body as Body, bytes };
  }

  let runs = 0;
  /** A run the owner created on the upload page (a profile of its own), navigated by the agent; the run. */
  async function navigatedRun(): Promise<RunView> {
    const created = await request<RunView>('POST', '/v1/runs', {
      token: parties.owner.token,
      json: { profile_id: `files-${++runs}`, intent: 'Send the invoice', origins: [FILES_ORIGIN] },
    });
    expect(created.status).toBe(201);
    const navigated = await propose(created.body.id, 'browser.navigate', { url: `${FILES_ORIGIN}/upload` });
    expect(navigated.status).toBe(200);
    return created.body;
  }

  /** Proposes one tool call at 1.5.0 as the agent. */
  function propose<Body = ToolCallView>(runId: string, tool: string, args: unknown, token = parties.agent.token) {
    return request<Body>('POST', `/v1/runs/${runId}/tool-calls`, { token, json: { tool, version: '1.5.0', arguments: args } });
  }

  /** Attaches `text` as a file named `name` as the owner (or `token`). */
  function attach<Body = unknown>(runId: string, name: string, text: string, token = parties.owner.token, mimeType = 'application/pdf') {
    return request<Body>('POST', `/v1/runs/${runId}/files`, { token, json: { name, mime_type: mimeType, data_base64: btoa(text) } });
  }

  return {
    app,
    request,
    ports,
    calls: host.calls,
    navigatedRun,
    propose,
    attach,
    revision: () => revision,
    /** The next page answer reports these downloads. */
    reportDownloads: (next: StandInDownload[]) => {
      pending = next;
    },
  };
}
