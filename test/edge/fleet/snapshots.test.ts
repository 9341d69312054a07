import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { checkFleet, noteFailedCheck } from '../../../edge/fleet/health.ts';
import { placeProfile } from '../../../edge/fleet/placement.ts';
import { configuredHostId } from '../../../edge/fleet/registry.ts';
import type { ToolCallView } from '../../../shared/api.ts';
import type { ErrorBody } from '../../../shared/errors.ts';
import { signSnapshotDownload, signSnapshotUpload, snapshotDownloadPath, snapshotUploadPath } from '../../../shared/fleet.ts';
import { partiesForEachTest } from '../support/edge-client.ts';
import { fleetApp, standInFleet } from '../support/fake-fleet.ts';

// Profile snapshots at the edge (issue 32): only the host a profile is placed on writes (at the
// placement's current generation) and reads them; bytes are checked against the token; the newest
// three are kept. The edge never opens a snapshot: the bytes here are arbitrary.

const parties = partiesForEachTest();
const ORIGIN = 'http://127.0.0.1:8125';

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** A fleet of two checked hosts (their hello ids known) and a profile placed on the first one that answers. */
async function placedProfile() {
  const fleet = standInFleet(2, { origin: ORIGIN });
  const { app, ports } = fleetApp(fleet);
  await checkFleet(ports());
  const profile = `snap${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const placed = await placeProfile(ports(), profile);
  const ids = await Promise.all(fleet.urls.map(configuredHostId));
  const on = fleet.hosts[ids.indexOf(placed.hostId)]!;
  const other = fleet.hosts[1 - ids.indexOf(placed.hostId)]!;
  const upload = async (
    bytes: Uint8Array<ArrayBuffer>,
    claims: { hostId?: string; generation?: number; digest?: string; sizeBytes?: number } = {},
    headers: Record<string, string> = {},
  ) => {
    const token = await signSnapshotUpload(env.HOST_SHARED_SECRET, {
      hostId: claims.hostId ?? on.hostId,
      profileId: profile,
      generation: claims.generation ?? placed.generation,
      digest: claims.digest ?? (await sha256Hex(bytes)),
      sizeBytes: claims.sizeBytes ?? bytes.byteLength,
    });
    const response = await app.request(`http://edge.test${snapshotUploadPath(profile)}`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream', ...headers },
      body: bytes,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> & ErrorBody };
  };
  const download = async (version: number, hostId = on.hostId) => {
    const token = await signSnapshotDownload(env.HOST_SHARED_SECRET, { hostId, profileId: profile, version });
    const response = await app.request(`http://edge.test${snapshotDownloadPath(profile, version)}`, { headers: { Authorization: `Bearer ${token}` } });
    return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
  };
  return { fleet, ports, profile, placed, on, other, upload, download };
}

describe('profile snapshots at the edge', () => {
  it('stores the placed host’s snapshot as the next version and gives it back to that host only', async () => {
    const { upload, download, other, profile } = await placedProfile();
    // Larger than any other body the API accepts (256 KiB).
    const bytes = Uint8Array.from({ length: 300_000 }, (_, index) => (index * 7919) % 251);
    expect(await upload(bytes)).toMatchObject({ status: 201, body: { profile_id: profile, version: 1, generation: 1 } });
    expect(await upload(bytes.slice(0, 1000))).toMatchObject({ status: 201, body: { version: 2 } });
    const back = await download(1);
    expect(back.status).toBe(200);
    expect(back.bytes).toEqual(bytes);
    expect((await download(1, other.hostId)).status).toBe(409);
    expect((await download(7)).status).toBe(404);
  });

  it('refuses a snapshot of a stale generation: a host that lost the profile cannot overwrite a newer snapshot', async () => {
    const { upload, ports, profile, placed, on, fleet } = await placedProfile();
    expect((await upload(new Uint8Array([1, 2, 3]))).status).toBe(201);
    // The host is declared unreachable and the profile moves on; then the old host comes back.
    for (let failed = 0; failed < 2; failed++) await noteFailedCheck(ports(), placed.hostId, 'cut off');
    on.down = true;
    const moved = await placeProfile(ports(), profile);
    expect(moved.generation).toBe(2);
    on.down = false;
    const late = await upload(new Uint8Array([9, 9, 9]), { generation: 1 });
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'stale_generation' } } });
    // Not even with the new generation: it is not the host the profile is placed on.
    expect((await upload(new Uint8Array([9, 9, 9]), { generation: 2 })).status).toBe(409);
    const newHost = fleet.hosts.find((host) => host !== on)!;
    expect((await upload(new Uint8Array([4, 5, 6]), { generation: 2, hostId: newHost.hostId })).body).toMatchObject({ version: 2, generation: 2 });
    const rows = await env.DB.prepare('SELECT version, generation FROM profile_snapshots WHERE host_profile_id = ? ORDER BY version').bind(profile).all();
    expect(rows.results).toEqual([
      { version: 1, generation: 1 },
      { version: 2, generation: 2 },
    ]);
  });

  it('refuses bytes that are not what the token says, a bad token and a wrong content type, storing nothing', async () => {
    const { upload, profile } = await placedProfile();
    const bytes = new Uint8Array([1, 2, 3, 4]);
    expect(await upload(bytes, { digest: 'ab'.repeat(32) })).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(await upload(bytes, { sizeBytes: 5 })).toMatchObject({ status: 400, body: { error: { code: 'invalid_request' } } });
    expect(await upload(bytes, {}, { Authorization: 'Bearer not-a-token' })).toMatchObject({ status: 401, body: { error: { code: 'unauthenticated' } } });
    expect(await upload(bytes, {}, { 'Content-Type': 'application/json' })).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } });
    const stored = await env.DB.prepare('SELECT count(*) AS n FROM profile_snapshots WHERE host_profile_id = ?').bind(profile).first<{ n: number }>();
    expect(stored?.n).toBe(0);
  });

  it('a version in the path is a plain decimal number: other spellings of version 1 are 400 invalid_request', async () => {
    const { upload, profile, on } = await placedProfile();
    expect((await upload(new Uint8Array([1]))).status).toBe(201);
    const token = await signSnapshotDownload(env.HOST_SHARED_SECRET, { hostId: on.hostId, profileId: profile, version: 1 });
    for (const spelling of ['1e0', '0x1', '1.0', '01', '%201', '+1', 'one', '0', '-1', '99999999999999999999']) {
      const response = await fleetApp(standInFleet(0, { origin: ORIGIN })).app.request(`http://edge.test/v1/host/snapshots/${profile}/${spelling}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect({ spelling, status: response.status, code: ((await response.json()) as ErrorBody).error.code }).toEqual({
        spelling,
        status: 400,
        code: 'invalid_request',
      });
    }
  });

  it('keeps the newest three versions, objects and rows alike', async () => {
    const { upload, profile } = await placedProfile();
    for (let version = 1; version <= 5; version++) expect((await upload(new Uint8Array([version]))).body.version).toBe(version);
    const rows = await env.DB.prepare('SELECT version FROM profile_snapshots WHERE host_profile_id = ? ORDER BY version').bind(profile).all();
    expect(rows.results.map((row) => row.version)).toEqual([3, 4, 5]);
    const objects = await env.ARTIFACTS.list({ prefix: `snapshots/${profile}/` });
    expect(objects.objects.map((object) => object.key.replace(/-[0-9a-f]{16}\.gbs$/, '.gbs')).sort()).toEqual(
      [3, 4, 5].map((version) => `snapshots/${profile}/v${version}.gbs`),
    );
  });

  it('stores every one of five uploads racing at the current generation, as versions 1 to 5: a race for a version is not a stale generation', async () => {
    const { upload, download, profile } = await placedProfile();
    const bodies = [1, 2, 3, 4, 5].map((fill) => new Uint8Array(64).fill(fill));
    const answers = await Promise.all(bodies.map((bytes) => upload(bytes)));
    // A 409 stale_generation tells the host to close the profile's browser: only a moved placement may answer it.
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201, 201]);
    expect(answers.map((answer) => answer.body.version).sort()).toEqual([1, 2, 3, 4, 5]);
    const rows = await env.DB.prepare('SELECT version, store_key FROM profile_snapshots WHERE host_profile_id = ? ORDER BY version')
      .bind(profile)
      .all<{ version: number; store_key: string }>();
    expect(rows.results.map((row) => row.version)).toEqual([3, 4, 5]);
    for (const row of rows.results) {
      const fetched = await download(row.version);
      expect(fetched.status).toBe(200);
      const sent = answers.findIndex((answer) => answer.body.version === row.version);
      expect(fetched.bytes).toEqual(bodies[sent]);
    }
    // The losers of each race removed their own objects: one object per kept row.
    const objects = await env.ARTIFACTS.list({ prefix: `snapshots/${profile}/` });
    expect(objects.objects.map((object) => object.key).sort()).toEqual(rows.results.map((row) => row.store_key).sort());
  });

  it('offers the placed host its snapshots to restore, newest first, and never again one it refused', async () => {
    const fleet = standInFleet(1, { origin: ORIGIN });
    const { request, ports } = fleetApp(fleet);
    await checkFleet(ports());
    const run = await request<{ id: string }>('POST', '/v1/runs', parties.owner.token, { profile_id: 'restored', intent: 'restore', origins: [ORIGIN] });
    const navigate = () =>
      request<ToolCallView>('POST', `/v1/runs/${run.body.id}/tool-calls`, parties.agent.token, {
        tool: 'browser.navigate',
        version: '1.4.0',
        arguments: { url: `${ORIGIN}/page` },
      });
    expect((await navigate()).status).toBe(200);
    const acquire = fleet.hosts[0]!.calls.find((sent) => sent.method === 'lease.acquire')!;
    const profile = String(acquire.params.profile_id);
    expect(acquire.params.placement).toMatchObject({ generation: 1, restore: [] });
    expect(String((acquire.params.placement as { snapshot_key: string }).snapshot_key)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const bytes of [new Uint8Array([1]), new Uint8Array([2])]) {
      const token = await signSnapshotUpload(env.HOST_SHARED_SECRET, {
        hostId: fleet.hosts[0]!.hostId,
        profileId: profile,
        generation: 1,
        digest: await sha256Hex(bytes),
        sizeBytes: 1,
      });
      await fleetApp(fleet).app.request(`http://edge.test${snapshotUploadPath(profile)}`, {
        method: 'PUT',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' },
        body: bytes,
      });
    }
    // The host reports it refused version 2 when it restored: version 2 is never offered again.
    fleet.hosts[0]!.restoreReport = { restored_version: 1, refused: [{ version: 2, reason: 'the SHA-256 is not the one the edge recorded' }] };
    await request('POST', `/v1/runs/${run.body.id}/report`, parties.agent.token, { status: 'completed', summary: 'done' });
    const again = await request<{ id: string }>('POST', '/v1/runs', parties.owner.token, { profile_id: 'restored', intent: 'again', origins: [ORIGIN] });
    await request('POST', `/v1/runs/${again.body.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.4.0',
      arguments: { url: `${ORIGIN}/page` },
    });
    const second = fleet.hosts[0]!.calls.filter((sent) => sent.method === 'lease.acquire')[1]!;
    expect((second.params.placement as { restore: Array<{ version: number }> }).restore.map((ref) => ref.version)).toEqual([2, 1]);
    const refused = await env.DB.prepare('SELECT version, refused_reason FROM profile_snapshots WHERE host_profile_id = ? AND refused_reason IS NOT NULL')
      .bind(profile)
      .all();
    expect(refused.results).toEqual([{ version: 2, refused_reason: 'the SHA-256 is not the one the edge recorded' }]);
    const third = await request<{ id: string }>('POST', '/v1/runs', parties.owner.token, { profile_id: 'restored', intent: 'third', origins: [ORIGIN] });
    await request('POST', `/v1/runs/${again.body.id}/report`, parties.agent.token, { status: 'completed', summary: 'done' });
    await request('POST', `/v1/runs/${third.body.id}/tool-calls`, parties.agent.token, {
      tool: 'browser.navigate',
      version: '1.4.0',
      arguments: { url: `${ORIGIN}/page` },
    });
    const thirdAcquire = fleet.hosts[0]!.calls.filter((sent) => sent.method === 'lease.acquire')[2]!;
    expect((thirdAcquire.params.placement as { restore: Array<{ version: number }> }).restore.map((ref) => ref.version)).toEqual([1]);
  });
});
