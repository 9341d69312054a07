import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CDPSession, Page, Response } from 'playwright-core';
import { MAX_RUN_FILE_BYTES, MediaType, RunFileName, UNSHOWN_CHARACTER, type WireDownload } from '../../shared/run-files.ts';
import { HostError } from '../host-error.ts';

/** Most downloads one observation reports (shared/authentication.ts `downloaded_files`). */
const MAX_REPORTED = 32;
/** Most finished downloads waiting to be reported; later ones are dropped unreported (and deleted). */
const MAX_UNREPORTED = 64;
/** Most downloads held at once (in progress, or saved and not yet read); one beginning past that is cancelled and reported `failed`. */
const MAX_HELD = 32;
/** Most navigation responses whose media type is remembered for the downloads they turn into. */
const MAX_REMEMBERED_TYPES = 16;
/** Longest suggested file name kept, in characters (shared/run-files.ts `RunFileName`). */
const MAX_NAME_CHARS = 255;

/** A download Chromium is still receiving. */
interface Receiving {
  readonly id: string;
  readonly fileName: string;
  readonly url: string;
  readonly session: CDPSession;
  /** Most bytes seen so far (a cancelled one reports 0 at the end). */
  bytes: number;
  /** Set once it went over {@link MAX_RUN_FILE_BYTES} and was cancelled. */
  tooLarge: boolean;
}

/** A `Page.downloadProgress` event (CDP). */
interface Progress {
  readonly guid: string;
  readonly totalBytes: number;
  readonly receivedBytes: number;
  readonly state: 'inProgress' | 'completed' | 'canceled';
}

/**
 * The files one browser's pages download (issue 33), held in a host-private temporary directory
 * (mode 0700, `host-downloads-*` under the OS temporary directory; Chromium names each file by its
 * download guid, Playwright's `downloadsPath`) until the edge reads them. Nothing here ever opens
 * or runs a file: the bytes are only read back for `page.download`.
 *
 * - A download is followed through CDP on the driven page (`Page.downloadWillBegin`,
 *   `Page.downloadProgress`): once it has received, or announced, more than
 *   {@link MAX_RUN_FILE_BYTES}, it is cancelled and its file deleted (`too_large`); Chromium
 *   reports progress a few times a second, so at most that long's bytes land on disk before the
 *   cancel. One that Chromium cancels or fails is `failed`; one that completes within the limit is
 *   `saved` with its size in bytes.
 * - Each finished download is reported once, oldest first, at most 32 at a time, by
 *   {@link report} (the next full observation's `downloaded_files`).
 * - A saved one stays until {@link take} reads it (and forgets it) or {@link clear} (a lease ends
 *   or begins) or {@link close} (the browser closes) deletes it.
 * - Its name is the page's suggested file name cut to a safe one (see {@link safeFileName}); its
 *   media type is the `Content-Type` of the navigation response it came from, when there was one.
 */
export class PageDownloads {
  readonly #dir: string;
  /** Downloads being received, by guid. */
  readonly #receiving = new Map<string, Receiving>();
  /** Finished downloads not yet reported, oldest first. */
  #unreported: WireDownload[] = [];
  /** Saved downloads not yet read: their file's path, by download id. */
  readonly #saved = new Map<string, { readonly download: WireDownload; readonly file: string }>();
  /** Media types of recent navigation responses, by URL. */
  readonly #types = new Map<string, string>();
  /** Counts {@link clear}s: a download that finishes across one is not kept. */
  #clears = 0;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Creates the browser's private download directory. @throws Error when it cannot be created. */
  static async create(): Promise<PageDownloads> {
    return new PageDownloads(await mkdtemp(path.join(tmpdir(), 'host-downloads-')));
  }

  /** Where Chromium writes downloads (Playwright's `downloadsPath`). */
  get directory(): string {
    return this.#dir;
  }

  /**
   * Follows the downloads of `page` (the driven page) until the returned function is called.
   * Never throws: a page whose CDP session cannot be opened has its downloads left unreported
   * (their files are still deleted by {@link clear} and {@link close}).
   */
  async attach(page: Page): Promise<() => void> {
    const onResponse = (response: Response): void => this.#rememberType(response);
    page.on('response', onResponse);
    let session: CDPSession;
    try {
      session = await page.context().newCDPSession(page);
    } catch {
      return () => page.off('response', onResponse);
    }
    session.on('Page.downloadWillBegin', (event) => this.#began(session, event as { guid: string; url: string; suggestedFilename: string }));
    session.on('Page.downloadProgress', (event) => void this.#progressed(event as Progress));
    await session.send('Page.enable').catch(() => {});
    return () => {
      page.off('response', onResponse);
      void session.detach().catch(() => {});
    };
  }

  /** Cancels every download `page` starts (a page the host opened for a load of its own): none is kept or reported. */
  refuseOn(page: Page): void {
    page.on('download', (download) => void download.cancel().catch(() => {}));
  }

  /** The finished downloads not yet reported, oldest first, at most 32; each is reported once. */
  report(): WireDownload[] {
    const reported = this.#unreported.slice(0, MAX_REPORTED);
    this.#unreported = this.#unreported.slice(MAX_REPORTED);
    return reported;
  }

  /**
   * A saved download and its bytes (base64), forgotten and deleted as it is read.
   * @throws HostError('invalid_params') for an id that names no saved download (unknown, not
   *   saved, already read, or cleared with its lease).
   */
  async take(downloadId: string): Promise<WireDownload & { data_base64: string }> {
    const saved = this.#saved.get(downloadId);
    if (saved === undefined)
      throw new HostError('invalid_params', `download ${downloadId} is not held by this browser (unknown, already read, or its lease ended)`);
    this.#saved.delete(downloadId);
    try {
      const bytes = await readFile(saved.file);
      return { ...saved.download, data_base64: bytes.toString('base64') };
    } catch (error) {
      throw new HostError('invalid_params', `download ${downloadId} could not be read back: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      await unlink(saved.file).catch(() => {});
    }
  }

  /**
   * Forgets every download (a lease ends or begins): those still being received are cancelled,
   * nothing is reported any more, and every file in the directory is deleted. Never throws.
   */
  async clear(): Promise<void> {
    for (const [guid, receiving] of this.#receiving) void receiving.session.send('Browser.cancelDownload', { guid }).catch(() => {});
    this.#clears += 1;
    this.#receiving.clear();
    this.#unreported = [];
    this.#saved.clear();
    this.#types.clear();
    const files = await readdir(this.#dir).catch(() => [] as string[]);
    await Promise.all(files.map((file) => rm(path.join(this.#dir, file), { force: true, recursive: true }).catch(() => {})));
  }

  /** Forgets every download and removes the directory (the browser closed). Never throws. */
  async close(): Promise<void> {
    await this.clear();
    await rm(this.#dir, { force: true, recursive: true }).catch(() => {});
  }

  #began(session: CDPSession, event: { guid: string; url: string; suggestedFilename: string }): void {
    const download: Receiving = { id: newDownloadId(), fileName: safeFileName(event.suggestedFilename), url: event.url, session, bytes: 0, tooLarge: false };
    if (this.#receiving.size + this.#saved.size >= MAX_HELD) {
      void session.send('Browser.cancelDownload', { guid: event.guid }).catch(() => {});
      this.#finish(download, 'failed');
      return;
    }
    this.#receiving.set(event.guid, download);
  }

  async #progressed({ guid, totalBytes, receivedBytes, state }: Progress): Promise<void> {
    const file = path.join(this.#dir, guid);
    const download = this.#receiving.get(guid);
    if (download === undefined) {
      // Cleared with its lease, or refused when it began: never kept.
      if (state !== 'inProgress') await unlink(file).catch(() => {});
      return;
    }
    download.bytes = Math.max(download.bytes, receivedBytes, totalBytes);
    if (download.bytes > MAX_RUN_FILE_BYTES) download.tooLarge = true;
    if (state === 'inProgress') {
      if (download.tooLarge) await download.session.send('Browser.cancelDownload', { guid }).catch(() => {});
      return;
    }
    this.#receiving.delete(guid);
    if (state === 'canceled' || download.tooLarge) {
      this.#finish(download, download.tooLarge ? 'too_large' : 'failed');
      await unlink(file).catch(() => {});
      return;
    }
    const clears = this.#clears;
    const bytes = await stat(file).then(
      (found) => found.size,
      () => undefined,
    );
    if (clears !== this.#clears) {
      await unlink(file).catch(() => {});
      return;
    }
    if (bytes === undefined || bytes > MAX_RUN_FILE_BYTES) {
      this.#finish({ ...download, bytes: bytes ?? download.bytes }, bytes === undefined ? 'failed' : 'too_large');
      await unlink(file).catch(() => {});
      return;
    }
    const reported = this.#finish({ ...download, bytes }, 'saved');
    if (reported === undefined) await unlink(file).catch(() => {});
    else this.#saved.set(download.id, { download: reported, file });
  }

  /** Queues the report of a finished download; undefined when the queue is full (it is dropped). */
  #finish(download: Receiving, state: WireDownload['state']): WireDownload | undefined {
    if (this.#unreported.length >= MAX_UNREPORTED) return undefined;
    const type = this.#types.get(download.url);
    const reported: WireDownload = {
      download_id: download.id,
      file_name: download.fileName,
      ...(type === undefined ? {} : { mime_type: type }),
      bytes: download.bytes,
      state,
    };
    this.#unreported.push(reported);
    return reported;
  }

  /** Remembers the media type of a navigation response (what a download's type is read from). */
  #rememberType(response: Response): void {
    if (!response.request().isNavigationRequest()) return;
    const type = mediaTypeOf(response.headers()['content-type']);
    if (type === undefined) return;
    this.#types.delete(response.url());
    this.#types.set(response.url(), type);
    for (const url of this.#types.keys()) {
      if (this.#types.size <= MAX_REMEMBERED_TYPES) break;
      this.#types.delete(url);
    }
  }
}

/** A fresh download id, `dl_` and 16 base64url characters. */
function newDownloadId(): string {
  return `dl_${randomBytes(12).toString('base64url')}`;
}

/**
 * `suggested` cut to a file name shared/run-files.ts `RunFileName` accepts: control and invisible
 * format characters dropped (`UNSHOWN_CHARACTER`), path separators as `_`, at most 255
 * characters (a cut never splits a surrogate pair); `download` when nothing usable is left
 * (empty, `.`, `..`).
 */
export function safeFileName(suggested: string): string {
  const cleaned = [...suggested]
    .filter((character) => !UNSHOWN_CHARACTER.test(character))
    .map((character) => (character === '/' || character === '\\' ? '_' : character))
    .join('')
    .trim();
  let name = '';
  for (const character of cleaned) {
    if (name.length + character.length > MAX_NAME_CHARS) break;
    name += character;
  }
  return RunFileName.safeParse(name).success ? name : 'download';
}

/** The lower-cased media type of a `Content-Type` header without its parameters, or undefined when it is not one. */
export function mediaTypeOf(header: string | undefined): string | undefined {
  const type = header?.split(';', 1)[0]?.trim().toLowerCase();
  return type !== undefined && MediaType.safeParse(type).success ? type : undefined;
}
