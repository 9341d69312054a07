import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { type ArtifactKey, type ArtifactStore, isArtifactKey } from '../artifacts/artifact-store.ts';

/** Content types by the extension a key ends with; anything else reads back as octet-stream. */
const CONTENT_TYPES: Readonly<Record<string, string>> = { jpg: 'image/jpeg', png: 'image/png', json: 'application/json' };

/**
 * An {@link ArtifactStore} of files under `directory` (Deno and Node; `EDGE_ARTIFACTS_DIR`,
 * default `.data/artifacts`): one file per key, written to a temporary name and renamed, so a
 * reader never sees half a picture. The content type follows from the key's extension. A file
 * that cannot be read reads as missing (null), logged.
 * @throws Error from `put`, `get` or `delete` for a key that is not an artifact key (a bug), and
 *   from `put` and `delete` when the file system refuses.
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
      const path = pathOf(key);
      try {
        const bytes = new Uint8Array(await readFile(path));
        return { bytes, contentType: CONTENT_TYPES[key.slice(key.lastIndexOf('.') + 1)] ?? 'application/octet-stream' };
      } catch (error) {
        // Missing, or unreadable (a directory in its place, wrong ownership after a restore): the
        // picture is gone as far as the owner is concerned; the operator's log says why.
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') console.error(`artifact store: cannot read ${key}: ${code ?? String(error)}`);
        return null;
      }
    },
    delete: async (keys) => {
      await Promise.all(keys.map((key) => rm(pathOf(key), { force: true })));
    },
  };
}
