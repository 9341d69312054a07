import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { type ArtifactKey, type ArtifactStore, isArtifactKey } from '../artifacts/artifact-store.ts';

/** Content types by the extension a key ends with; anything else reads back as octet-stream. */
const CONTENT_TYPES: Readonly<Record<string, string>> = { jpg: 'image/jpeg', png: 'image/png', json: 'application/json' };

/**
 * An {@link ArtifactStore} of files under `directory` (Deno and Node; `EDGE_ARTIFACTS_DIR`,
 * default `.data/artifacts`): one file per key, written to a temporary name and renamed, so a
 * reader never sees half a picture. The content type follows from the key's extension.
 * @throws Error from `put`, `get` or `delete` for a key that is not an artifact key (a bug).
 */
export function fileArtifactStore(directory: string): ArtifactStore {
  const root = resolve(directory);
  const pathOf = (key: ArtifactKey): string => {
    const path = resolve(root, key);
    if (!isArtifactKey(key) || !path.startsWith(root + sep)) throw new Error(`not an artifact key: ${key}`);
    return path;
  };
  return {
    put: async (key, bytes) => {
      const path = pathOf(key);
      await mkdir(dirname(path), { recursive: true });
      const temporary = join(dirname(path), `.${crypto.randomUUID()}.part`);
      await writeFile(temporary, bytes);
      await rename(temporary, path);
    },
    get: async (key) => {
      try {
        const bytes = new Uint8Array(await readFile(pathOf(key)));
        return { bytes, contentType: CONTENT_TYPES[key.slice(key.lastIndexOf('.') + 1)] ?? 'application/octet-stream' };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    delete: async (keys) => {
      await Promise.all(keys.map((key) => rm(pathOf(key), { force: true })));
    },
  };
}
