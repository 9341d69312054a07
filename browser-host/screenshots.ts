import type { Locator, Page } from 'playwright-core';
import { MAX_SCREENSHOT_BYTES, type PageScreenshot, type ScreenshotBox } from '../shared/protocol.ts';
import { MAX_OBSERVATION_SCREENSHOT_BYTES, type WireScreenshot } from '../shared/run-files.ts';
import { Deadline } from './deadline.ts';
import { firstLineOf, HostError } from './host-error.ts';

/** Screenshot settings of the host (`HOST_SCREENSHOTS`, `HOST_SCREENSHOT_QUALITY`). */
export interface ScreenshotConfig {
  /** False: no screenshots at all; `page.screenshot` fails `not_found`. */
  readonly enabled: boolean;
  /** JPEG quality, 10-95. */
  readonly quality: number;
}

/** Defaults of {@link ScreenshotConfig}. */
export const DEFAULT_SCREENSHOT_CONFIG: ScreenshotConfig = { enabled: true, quality: 60 };

/** Quality of the second try when the first JPEG is larger than {@link MAX_SCREENSHOT_BYTES}. */
const FALLBACK_QUALITY = 25;
/** Screenshots kept per browser, the newest revisions' (about 30-120 KB each). */
const SHELF_SIZE = 4;
/** Longest the shelved screenshot after an act or navigation may take, turn included, in ms. */
const SHELVED_SCREENSHOT_MS = 5_000;
/** Longest the look-up of a reference's box may take, in ms. */
const BOX_TIMEOUT_MS = 1_000;

/** JPEG qualities an observation's screenshot tries in turn until one is within {@link MAX_OBSERVATION_SCREENSHOT_BYTES}. */
const OBSERVATION_QUALITIES = [75, 50, 30, 15] as const;

/** A screenshot without its revision and box: what {@link takeScreenshot} answers. */
export type ViewportPicture = Omit<PageScreenshot, 'revision' | 'box'>;

/**
 * A JPEG of `page`'s viewport at CSS scale (so its pixels are the viewport's CSS px), through
 * Playwright's `page.screenshot` with the caret and animations left alone: nothing is injected
 * into the page. A picture over {@link MAX_SCREENSHOT_BYTES} is retaken at quality 25 (when that is lower).
 * @throws HostError('deadline_exceeded') when `deadline` passes first; HostError('page_changed')
 *   when the page cannot be pictured (closed, crashed) or stays too large.
 */
export async function takeScreenshot(page: Page, deadline: Deadline, config: ScreenshotConfig): Promise<ViewportPicture> {
  const qualities = config.quality > FALLBACK_QUALITY ? [config.quality, FALLBACK_QUALITY] : [config.quality];
  const jpeg = await viewportJpeg(page, deadline, qualities, MAX_SCREENSHOT_BYTES);
  const viewport = page.viewportSize() ?? jpegSize(jpeg);
  return { jpeg_base64: jpeg.toString('base64'), width: viewport.width, height: viewport.height, taken_at_ms: Date.now() };
}

/**
 * The viewport screenshot an observation carries (`page.observe {screenshot: true}`, 1.5.0): a
 * JPEG of `page`'s viewport at CSS scale (its pixels are CSS px, the units of a point), nothing
 * injected into the page, at quality 75, retaken at 50, 30 and 15 while over
 * {@link MAX_OBSERVATION_SCREENSHOT_BYTES}; `width` and `height` are the image's own, in px.
 * @throws HostError('deadline_exceeded') when `deadline` passes first; HostError('page_changed')
 *   when the page cannot be pictured (closed, crashed) or the picture stays over the limit even at quality 15.
 */
export async function observationScreenshot(page: Page, deadline: Deadline): Promise<WireScreenshot> {
  const jpeg = await viewportJpeg(page, deadline, OBSERVATION_QUALITIES, MAX_OBSERVATION_SCREENSHOT_BYTES);
  return { mime_type: 'image/jpeg', ...jpegSize(jpeg), data_base64: jpeg.toString('base64') };
}

/**
 * A JPEG of `page`'s viewport at CSS scale, caret and animations left alone (nothing injected
 * into the page), at the first of `qualities` that keeps it within `maxBytes` bytes.
 * @throws HostError('deadline_exceeded') when `deadline` passes first; HostError('page_changed')
 *   when the page cannot be pictured (closed, crashed) or the picture stays over `maxBytes` at the last quality.
 */
async function viewportJpeg(page: Page, deadline: Deadline, qualities: readonly number[], maxBytes: number): Promise<Buffer> {
  try {
    for (const quality of qualities) {
      const jpeg = await page.screenshot({
        type: 'jpeg',
        quality,
        scale: 'css',
        caret: 'initial',
        animations: 'allow',
        timeout: Math.max(1, deadline.remainingMs()),
      });
      if (jpeg.byteLength <= maxBytes) return jpeg;
    }
  } catch (error) {
    if (deadline.expired) throw new HostError('deadline_exceeded', `the screenshot ran out of time: ${firstLineOf(error)}`);
    throw new HostError('page_changed', `the page could not be pictured: ${firstLineOf(error)}`);
  }
  throw new HostError('page_changed', `the screenshot stays over ${maxBytes} bytes even at quality ${qualities.at(-1)}`);
}

/**
 * Where `target` is on the viewport, in CSS px, or null when it has no box (hidden, detached, or
 * not found within 1,000 ms). Reads layout only; never scrolls or waits for actionability.
 */
export async function boxOf(target: Locator, deadline: Deadline): Promise<ScreenshotBox | null> {
  try {
    const box = await target.boundingBox({ timeout: Math.max(1, Math.min(BOX_TIMEOUT_MS, deadline.remainingMs())) });
    return box && [box.x, box.y, box.width, box.height].every(Number.isFinite) ? box : null;
  } catch {
    return null;
  }
}

/** Width and height in px from a JPEG's first start-of-frame marker; 1 x 1 when it has none. */
export function jpegSize(jpeg: Buffer): { width: number; height: number } {
  let offset = 2;
  while (offset + 9 < jpeg.length) {
    if (jpeg[offset] !== 0xff) break;
    const marker = jpeg[offset + 1]!;
    const length = jpeg.readUInt16BE(offset + 2);
    if (marker >= 0xc0 && marker <= 0xc3) return { height: jpeg.readUInt16BE(offset + 5), width: jpeg.readUInt16BE(offset + 7) };
    offset += 2 + length;
  }
  return { width: 1, height: 1 };
}

/**
 * The screenshots one browser took right after its acts and navigations, by revision: the
 * newest four. Each is taken as soon as the operation that produced its revision has its answer,
 * and nothing waits for it: not that answer, not a later read, not a later write (issue 15: at
 * most 30 ms of delay at the median). A picture that was still being taken when a later act or
 * navigation began ({@link writeBegins}) is dropped, since it might show that write's input.
 */
export class ScreenshotShelf {
  readonly #pictures = new Map<number, { readonly leaseId: string; readonly picture: Promise<ViewportPicture | undefined> }>();
  #writes = 0;

  /**
   * Takes a screenshot of `revision`, for `leaseId` only, unless by then the page is gone or
   * shows another revision (`current()` differs). Never throws: a picture that cannot be taken
   * (in 5,000 ms), or that a write overtook, is simply not kept.
   * @param pageOf the page the operations drive, if it is open (never opens one).
   */
  shelve(leaseId: string, revision: number, current: () => number, pageOf: () => Page | undefined, config: ScreenshotConfig): void {
    const deadline = Deadline.after(SHELVED_SCREENSHOT_MS);
    const writes = this.#writes;
    const picture = Promise.resolve()
      .then(async () => {
        const page = pageOf();
        if (page === undefined || current() !== revision) return undefined;
        const taken = await takeScreenshot(page, deadline, config);
        return this.#writes === writes ? taken : undefined;
      })
      .catch(() => undefined)
      .finally(() => deadline.dispose());
    this.#pictures.set(revision, { leaseId, picture });
    for (const kept of this.#pictures.keys()) {
      if (this.#pictures.size <= SHELF_SIZE) break;
      this.#pictures.delete(kept);
    }
  }

  /** An act or navigation begins on the page: a picture still being taken is no longer trusted. */
  writeBegins(): void {
    this.#writes += 1;
  }

  /**
   * The picture of `revision` shelved for `leaseId`, once taken; undefined when none is kept
   * (another lease's, evicted, overtaken) or it could not be taken.
   * @throws HostError('deadline_exceeded') when it is still being taken as `deadline` passes.
   */
  async get(leaseId: string, revision: number, deadline: Deadline): Promise<ViewportPicture | undefined> {
    const kept = this.#pictures.get(revision);
    return kept === undefined || kept.leaseId !== leaseId ? undefined : deadline.race(kept.picture);
  }
}
