import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenshotKey } from '../../../edge/artifacts/artifact-store.ts';
import { fileArtifactStore } from '../../../edge/self-hosted/file-artifact-store.ts';

// The artifact store of the Deno and Node edges (files under EDGE_ARTIFACTS_DIR), on the real
// file system.

let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'artifact-store-'));
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe('the file artifact store', () => {
  it('keeps, reads back and removes a picture under its key, with its content type', async () => {
    const store = fileArtifactStore(directory);
    const key = screenshotKey('prn_owner', 'run_one', 'art_first');
    await store.put(key, new Uint8Array([0xff, 0xd8, 1, 2, 0xff, 0xd9]), 'image/jpeg');
    expect(await store.get(key)).toEqual({ bytes: new Uint8Array([0xff, 0xd8, 1, 2, 0xff, 0xd9]), contentType: 'image/jpeg' });
    await store.delete([key, screenshotKey('prn_owner', 'run_one', 'art_never')]);
    expect(await store.get(key)).toBeNull();
  });

  it('reads a picture it cannot read (a directory in its place, say) as missing, not as a failure', async () => {
    const store = fileArtifactStore(directory);
    const key = screenshotKey('prn_owner', 'run_two', 'art_broken');
    await mkdir(join(directory, key), { recursive: true });
    expect(await store.get(key)).toBeNull();
  });

  it('refuses keys that are not its own, such as a path out of its directory', async () => {
    const store = fileArtifactStore(directory);
    await expect(store.get('../escape.jpg' as never)).rejects.toThrow(/not an artifact key/);
    await expect(store.put('screenshots/../../x.jpg' as never, new Uint8Array(1), 'image/jpeg')).rejects.toThrow(/not an artifact key/);
  });
});
