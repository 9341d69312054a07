import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Deadline } from '../deadline.ts';
import type { ProfileBrowser } from '../profile-browser.ts';
import { sealPath } from '../site-verification/seal.ts';
import { packProfile } from './archive.ts';

/**
 * Captures the archive of a running profile (archive.ts): its storage state, its user-data
 * directory and its account seal, read in the page's turn (see `ProfileBrowser.run`), so no
 * navigation or input of a lease changes the profile while it is read, and admission never
 * closes a browser being read (a browser whose lock is held is busy).
 * @returns the archive's bytes (gzip tar), not yet sealed.
 * @throws HostError('deadline_exceeded') when its turn or the capture outlasts `deadline`;
 *   Error when the browser is gone or the directory cannot be read (see `packProfile`).
 */
export function captureProfileArchive(deadline: Deadline, browser: ProfileBrowser, profilesDir: string): Promise<Uint8Array> {
  return browser.lock.run(deadline, async () => {
    if (browser.closed) throw new Error('the browser was closed');
    const storageState = await deadline.race(browser.storageState());
    const accountSeal = await readFile(sealPath(profilesDir, browser.profileId), 'utf8').catch(() => undefined);
    return deadline.race(packProfile({ userDataDir: path.join(profilesDir, browser.profileId), storageState, accountSeal }));
  });
}
