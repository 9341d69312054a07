import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { create, extract, WriteEntry } from 'tar';
import { z } from 'zod';
import { firstLineOf } from '../host-error.ts';
import { SnapshotRefusal } from './refusal.ts';

// The archive inside a profile's snapshot (issue 32): a gzip tar with the profile's user-data
// directory under `user-data/`, Playwright's storage state as `storage-state.json` (session
// cookies are never on disk, and persistent ones reach it only at Chromium's next cookie flush),
// and the profile's account seal as `account-seal.json` when it has one (the seal lives beside
// the directory, site-verification/seal.ts, and must move with the profile or a moved profile
// would accept another account). The edge never opens it: it is sealed before it leaves the host.

/** The archive's directory holding the user-data directory. */
export const USER_DATA_ENTRY = 'user-data';
/** The archive's entry holding the storage state JSON. */
export const STORAGE_STATE_ENTRY = 'storage-state.json';
/** The archive's entry holding the account seal JSON, when the profile has one. */
export const ACCOUNT_SEAL_ENTRY = 'account-seal.json';

/**
 * Names left out at any depth of the user-data directory: caches Chromium rebuilds, its crash
 * dumps, the port file of a DevTools listener, and (see {@link leftOutOfSnapshot}) the
 * `Singleton*` locks of a running Chromium and its half-written `.org.chromium.*` temporary files.
 */
export const LEFT_OUT_NAMES: ReadonlySet<string> = new Set([
  'Cache',
  'Code Cache',
  'GPUCache',
  'ShaderCache',
  'GrShaderCache',
  'GraphiteDawnCache',
  'DawnCache',
  'DawnGraphiteCache',
  'DawnWebGPUCache',
  'Crashpad',
  'DevToolsActivePort',
]);

/** Whether a file or directory named `name` stays out of a snapshot, wherever it is in the profile. */
export function leftOutOfSnapshot(name: string): boolean {
  return LEFT_OUT_NAMES.has(name) || name.startsWith('Singleton') || name.startsWith('.org.chromium.');
}

/** Most bytes of profile files one archive may read, before compression; a larger profile is not snapshotted. */
export const MAX_PROFILE_BYTES = 256 * 1024 * 1024;

/** What Playwright's `storageState()` answers (cookies with their expiry, local storage by origin). */
export type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>;
/**
 * The storage state entry as read back: only what a restore uses (cookies, and local storage by
 * origin) is checked; the archive's own format, not a contract with the edge, which never sees
 * inside a snapshot.
 */
const StorageStateEntry = z.object({
  cookies: z.array(
    z.looseObject({
      name: z.string(),
      value: z.string(),
      domain: z.string(),
      path: z.string(),
      expires: z.number(),
      httpOnly: z.boolean(),
      secure: z.boolean(),
      sameSite: z.enum(['Strict', 'Lax', 'None']),
    }),
  ),
  origins: z.array(z.object({ origin: z.string(), localStorage: z.array(z.object({ name: z.string(), value: z.string() })) })),
});
/** What a restore puts back into a running browser: every cookie, and the local storage of each origin the snapshot saw. */
export type RestoredStorage = z.infer<typeof StorageStateEntry>;

/** What goes into a profile's archive. */
export interface ProfileArchiveContents {
  /** The profile's user-data directory. */
  readonly userDataDir: string;
  /** The context's storage state, as `BrowserContext.storageState()` answered it. */
  readonly storageState: StorageState;
  /** The account seal file's text, if the profile has one. */
  readonly accountSeal: string | undefined;
}

/**
 * Packs a profile into a gzip tar (see the layout above), in memory. Every file is read whole
 * before its header is written, so a file Chromium rewrites meanwhile is archived as one of its
 * versions rather than failing the archive; a file or directory that disappears meanwhile is left
 * out. Symbolic links, sockets and the {@link leftOutOfSnapshot} names are left out.
 * @returns the archive's bytes.
 * @throws Error when the profile holds more than {@link MAX_PROFILE_BYTES} bytes of files, or a
 *   file cannot be read for another reason than having disappeared.
 */
export async function packProfile(contents: ProfileArchiveContents): Promise<Uint8Array> {
  const entries: WriteEntry[] = [new WriteEntry({ path: `${USER_DATA_ENTRY}/`, type: 'Directory', mode: 0o700 })];
  await collectDirectory(contents.userDataDir, '', entries, { bytes: 0 });
  entries.push(new WriteEntry({ path: STORAGE_STATE_ENTRY, mode: 0o600 }, JSON.stringify(contents.storageState)));
  if (contents.accountSeal !== undefined) entries.push(new WriteEntry({ path: ACCOUNT_SEAL_ENTRY, mode: 0o600 }, contents.accountSeal));
  const stream = create({ gzip: true, portable: true }, entries);
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function collectDirectory(root: string, relative: string, entries: WriteEntry[], read: { bytes: number }): Promise<void> {
  let items: Dirent[];
  try {
    items = await readdir(path.join(root, relative), { withFileTypes: true });
  } catch (error) {
    if (missing(error)) return;
    throw error;
  }
  items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const item of items) {
    if (leftOutOfSnapshot(item.name)) continue;
    const entryPath = relative === '' ? item.name : `${relative}/${item.name}`;
    if (item.isDirectory()) {
      entries.push(new WriteEntry({ path: `${USER_DATA_ENTRY}/${entryPath}/`, type: 'Directory', mode: 0o700 }));
      await collectDirectory(root, entryPath, entries, read);
    } else if (item.isFile()) {
      let bytes: Uint8Array;
      try {
        bytes = await readFile(path.join(root, entryPath));
      } catch (error) {
        if (missing(error)) continue;
        throw error;
      }
      read.bytes += bytes.byteLength;
      if (read.bytes > MAX_PROFILE_BYTES) throw new Error(`the profile holds more than ${MAX_PROFILE_BYTES} bytes of files`);
      entries.push(new WriteEntry({ path: `${USER_DATA_ENTRY}/${entryPath}`, mode: 0o600 }, bytes));
    }
  }
}

/** A profile unpacked by {@link unpackProfile}. */
export interface UnpackedProfile {
  /** The user-data directory, inside the directory it was unpacked into. */
  readonly userDataDir: string;
  /**
   * The storage state's cookies (session cookies included) and local storage, to put back once
   * Chromium runs: local storage reaches the directory only at Chromium's next commit, seconds
   * after a page writes it, so the directory alone may hold an older one.
   */
  readonly storage: RestoredStorage;
  /** The account seal file's text, if the snapshot had one. */
  readonly accountSeal: string | undefined;
}

/**
 * Unpacks an archive made by {@link packProfile} into `into` (an empty directory), keeping only
 * its files and directories under the layout above (no links, nothing outside `into`: tar's own
 * path checks), and reads back the storage state and the account seal.
 * @throws SnapshotRefusal when the archive is damaged or truncated (tar stops at the first bad
 *   entry) or lacks its user-data directory or a valid storage state; `into` may then hold part
 *   of it, and the caller removes it.
 */
export async function unpackProfile(archive: Uint8Array, into: string): Promise<UnpackedProfile> {
  try {
    await extract({
      input: archive,
      cwd: into,
      strict: true,
      preserveOwner: false,
      noMtime: true,
      filter: (entryPath, entry) =>
        (entry.type === 'File' || entry.type === 'Directory') &&
        (entryPath.startsWith(`${USER_DATA_ENTRY}/`) || entryPath === STORAGE_STATE_ENTRY || entryPath === ACCOUNT_SEAL_ENTRY),
    });
  } catch (error) {
    throw new SnapshotRefusal(`the archive is damaged or truncated: ${firstLineOf(error)}`, { cause: error });
  }
  const userDataDir = path.join(into, USER_DATA_ENTRY);
  if (!(await stat(userDataDir).catch(() => undefined))?.isDirectory()) throw new SnapshotRefusal('the archive has no user-data directory');
  let storage: RestoredStorage;
  try {
    storage = StorageStateEntry.parse(JSON.parse(await readFile(path.join(into, STORAGE_STATE_ENTRY), 'utf8')));
  } catch (error) {
    throw new SnapshotRefusal(`the archive's storage state is missing or invalid: ${firstLineOf(error)}`, { cause: error });
  }
  const accountSeal = await readFile(path.join(into, ACCOUNT_SEAL_ENTRY), 'utf8').catch(() => undefined);
  return { userDataDir, storage, accountSeal };
}

function missing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
