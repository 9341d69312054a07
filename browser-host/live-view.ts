import { randomBytes } from 'node:crypto';
import type { CDPSession, Page } from 'playwright-core';
import { FRAMES_IN_FLIGHT, type ViewEndReason, type ViewInputEvent } from '../shared/live-view.ts';
import { HostError } from './host-error.ts';
import { jpegSize } from './screenshots.ts';
import type { WireConnection } from './wire-connection.ts';

/** JPEG quality of the screencast frames. */
const FRAME_QUALITY = 60;
/** Frames whose size the host remembers for mapping input, the newest ones. */
const REMEMBERED_FRAMES = 8;
/** Most live views open at once on a host (one per ceremony is the rule; this bounds the rest). */
export const MAX_LIVE_VIEWS = 16;

/** A frame as Chromium delivered it, held until the viewer has room for it. */
interface HeldFrame {
  readonly data: string;
  readonly sessionId: number;
  /** The page's viewport in CSS px when the frame was drawn. */
  readonly deviceWidth: number;
  readonly deviceHeight: number;
}

/** Where a frame sent to the viewer maps onto the page: its px and the viewport's CSS px. */
interface SentFrame {
  readonly width: number;
  readonly height: number;
  readonly deviceWidth: number;
  readonly deviceHeight: number;
}

/**
 * One live view (issue 16): the screencast of one ceremony's page (CDP `Page.startScreencast`,
 * JPEG, at most the viewer's size) sent as `liveview.frame` notifications on the connection
 * that opened it, and the person's input applied to that page only, through Playwright's mouse
 * and keyboard (CDP `Input.dispatchMouseEvent` / `dispatchKeyEvent` / `insertText` underneath).
 *
 * Memory is bounded whatever the viewer does: at most {@link FRAMES_IN_FLIGHT} frames are sent
 * ahead of the viewer's acknowledgements; meanwhile Chromium's newest frame is held unacknowledged
 * (one frame), so Chromium draws no more until there is room. Nothing typed is logged; frames
 * are not stored.
 */
class LiveView {
  readonly id = `view_${randomBytes(12).toString('base64url')}`;
  readonly ceremonyId: string;
  readonly #page: Page;
  readonly #cdp: CDPSession;
  readonly #connection: WireConnection;
  readonly #onEnded: (view: LiveView) => void;
  #held: HeldFrame | undefined;
  #seq = 0;
  #acked = 0;
  readonly #sent = new Map<number, SentFrame>();
  #input: Promise<unknown> = Promise.resolve();
  #ended = false;
  /** Keys and mouse buttons this view pressed and has not released: released when it ends. */
  readonly #keysDown = new Set<string>();
  readonly #buttonsDown = new Set<'left' | 'middle' | 'right'>();
  readonly #onPageClosed = () => this.end('page_gone');

  constructor(ceremonyId: string, page: Page, cdp: CDPSession, connection: WireConnection, onEnded: (view: LiveView) => void) {
    this.ceremonyId = ceremonyId;
    this.#page = page;
    this.#cdp = cdp;
    this.#connection = connection;
    this.#onEnded = onEnded;
  }

  /** Starts the screencast; the view ends with the page and with the connection. */
  async start(maxWidth: number, maxHeight: number): Promise<void> {
    this.#cdp.on('Page.screencastFrame', (frame) => {
      this.#held = { data: frame.data, sessionId: frame.sessionId, deviceWidth: frame.metadata.deviceWidth, deviceHeight: frame.metadata.deviceHeight };
      this.#pump();
    });
    this.#page.once('close', this.#onPageClosed);
    this.#connection.onClose(() => this.end('closed'));
    await this.#cdp.send('Page.startScreencast', { format: 'jpeg', quality: FRAME_QUALITY, maxWidth, maxHeight, everyNthFrame: 1 });
  }

  /** The viewer has drawn every frame up to `seq`: room for the next. */
  acknowledge(seq: number): void {
    if (seq > this.#acked && seq <= this.#seq) this.#acked = seq;
    this.#pump();
  }

  /**
   * Applies `events` in order, after any input still being applied, mapped from the px of frame
   * `frameSeq` (the newest sent, when not given) onto the page's CSS px. An event outside that
   * frame, or a key Playwright does not know, is skipped.
   * @returns how many were applied.
   * @throws HostError('not_found') when the view has ended.
   */
  input(events: readonly ViewInputEvent[], frameSeq: number | undefined): Promise<number> {
    if (this.#ended) return Promise.reject(new HostError('not_found', 'the live view has ended'));
    const frame = this.#sent.get(frameSeq ?? this.#seq) ?? this.#sent.get(this.#seq);
    const applying = this.#input.then(async () => {
      let applied = 0;
      for (const event of events) {
        if (this.#ended) break;
        if (await this.#apply(event, frame)) applied += 1;
      }
      return applied;
    });
    this.#input = applying.catch(() => {});
    return applying;
  }

  async #apply(event: ViewInputEvent, frame: SentFrame | undefined): Promise<boolean> {
    const { mouse, keyboard } = this.#page;
    try {
      switch (event.type) {
        case 'mouse':
        case 'wheel': {
          if (frame === undefined || event.x > frame.width || event.y > frame.height) return false;
          const x = (event.x / frame.width) * frame.deviceWidth;
          const y = (event.y / frame.height) * frame.deviceHeight;
          await mouse.move(x, y);
          if (event.type === 'wheel') await mouse.wheel(event.delta_x, event.delta_y);
          else if (event.action !== 'move' && event.button !== 'none') {
            const options = { button: event.button, clickCount: Math.max(1, event.click_count) };
            await (event.action === 'down' ? mouse.down(options) : mouse.up(options));
            if (event.action === 'down') this.#buttonsDown.add(event.button);
            else this.#buttonsDown.delete(event.button);
          }
          return true;
        }
        case 'key':
          await (event.action === 'down' ? keyboard.down(event.key) : keyboard.up(event.key));
          if (event.action === 'down') this.#keysDown.add(event.key);
          else this.#keysDown.delete(event.key);
          return true;
        case 'text':
          await keyboard.insertText(event.text);
          return true;
      }
    } catch {
      // An unknown key name, or the page went away: skipped, and never logged (it may be a password).
      return false;
    }
  }

  /** Sends the held frame when the viewer has room and the connection is not backed up. */
  #pump(): void {
    const held = this.#held;
    if (this.#ended || held === undefined || this.#seq - this.#acked >= FRAMES_IN_FLIGHT) return;
    const size = jpegSize(Buffer.from(held.data.slice(0, 4_096), 'base64'));
    const seq = this.#seq + 1;
    const sent = this.#connection.notify({
      method: 'liveview.frame',
      params: { view_id: this.id, seq, jpeg_base64: held.data, width: size.width, height: size.height },
    });
    // A connection backed up by more than 1 MiB takes nothing: the frame stays held (the newest replaces it).
    if (!sent) return;
    this.#held = undefined;
    this.#seq = seq;
    this.#sent.set(seq, { width: size.width, height: size.height, deviceWidth: held.deviceWidth, deviceHeight: held.deviceHeight });
    for (const old of this.#sent.keys()) if (old <= seq - REMEMBERED_FRAMES) this.#sent.delete(old);
    void this.#cdp.send('Page.screencastFrameAck', { sessionId: held.sessionId }).catch(() => {});
  }

  /**
   * Ends the view once: stops the screencast, detaches, releases every key and button it still
   * holds (after the input being applied), so nothing held carries over to the page's next user,
   * and tells the viewer why.
   */
  end(reason: ViewEndReason): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#held = undefined;
    this.#sent.clear();
    this.#page.off('close', this.#onPageClosed);
    const { keyboard, mouse } = this.#page;
    this.#input = this.#input.then(async () => {
      for (const key of this.#keysDown) await keyboard.up(key).catch(() => {});
      for (const button of this.#buttonsDown) await mouse.up({ button }).catch(() => {});
      this.#keysDown.clear();
      this.#buttonsDown.clear();
    });
    void this.#cdp
      .send('Page.stopScreencast')
      .catch(() => {})
      .finally(() => this.#cdp.detach().catch(() => {}));
    this.#connection.notify({ method: 'liveview.ended', params: { view_id: this.id, reason } });
    this.#onEnded(this);
  }

  /** Tells the viewer a sentence (`liveview.notice`), e.g. what the sign-in window refused; nothing once ended. */
  notice(sentence: string): void {
    if (!this.#ended) this.#connection.notify({ method: 'liveview.notice', params: { view_id: this.id, message: sentence } });
  }
}

/**
 * The host's live views, at most one per ceremony (a newer one ends the older) and at most
 * {@link MAX_LIVE_VIEWS} in all. See {@link LiveView}.
 */
export class LiveViews {
  readonly #views = new Map<string, LiveView>();
  /** The latest open in progress per ceremony, which the next one waits for. */
  readonly #opening = new Map<string, Promise<void>>();

  /**
   * Opens a view of `page`, the page of ceremony `ceremonyId`, sending frames on `connection`.
   * @returns the view's id.
   * @throws HostError('admission_full') past {@link MAX_LIVE_VIEWS}; HostError('page_changed')
   *   when the screencast cannot start (the page went away).
   */
  async open(ceremonyId: string, page: Page, connection: WireConnection, maxWidth: number, maxHeight: number): Promise<string> {
    // Opens of one ceremony take turns: the last to open is the one left open, the others end.
    const turn = (this.#opening.get(ceremonyId) ?? Promise.resolve()).then(() => this.#open(ceremonyId, page, connection, maxWidth, maxHeight));
    const settled = turn.then(
      () => {},
      () => {},
    );
    this.#opening.set(ceremonyId, settled);
    void settled.finally(() => {
      if (this.#opening.get(ceremonyId) === settled) this.#opening.delete(ceremonyId);
    });
    return turn;
  }

  async #open(ceremonyId: string, page: Page, connection: WireConnection, maxWidth: number, maxHeight: number): Promise<string> {
    for (const view of this.#views.values()) if (view.ceremonyId === ceremonyId) view.end('ended');
    if (this.#views.size >= MAX_LIVE_VIEWS) throw new HostError('admission_full', `at most ${MAX_LIVE_VIEWS} live views at once`);
    let cdp: CDPSession;
    try {
      cdp = await page.context().newCDPSession(page);
    } catch {
      throw new HostError('page_changed', 'the sign-in page went away before the live view could start');
    }
    const view = new LiveView(ceremonyId, page, cdp, connection, (ended) => this.#views.delete(ended.id));
    if (this.#views.size >= MAX_LIVE_VIEWS) {
      await cdp.detach().catch(() => {});
      throw new HostError('admission_full', `at most ${MAX_LIVE_VIEWS} live views at once`);
    }
    this.#views.set(view.id, view);
    try {
      await view.start(maxWidth, maxHeight);
    } catch {
      view.end('page_gone');
      throw new HostError('page_changed', 'the live view could not start on the sign-in page');
    }
    return view.id;
  }

  /**
   * The view `viewId`.
   * @throws HostError('not_found') when there is no such view (never opened, or ended).
   */
  get(viewId: string): LiveView {
    const view = this.#views.get(viewId);
    if (view === undefined) throw new HostError('not_found', 'no such live view (it has ended)');
    return view;
  }

  /** Ends `viewId`; false when there was no such view. */
  close(viewId: string): boolean {
    const view = this.#views.get(viewId);
    view?.end('closed');
    return view !== undefined;
  }

  /** Ends every view of `ceremonyId` with `reason` (the ceremony's outcome, or `ended`). */
  endCeremony(ceremonyId: string, reason: ViewEndReason): void {
    for (const view of this.#views.values()) if (view.ceremonyId === ceremonyId) view.end(reason);
  }

  /** Tells every view of `ceremonyId` a sentence for the person (see LiveView `notice`). */
  notice(ceremonyId: string, sentence: string): void {
    for (const view of this.#views.values()) if (view.ceremonyId === ceremonyId) view.notice(sentence);
  }

  /** Ends every view (host shutdown). */
  closeAll(): void {
    for (const view of this.#views.values()) view.end('host_closing');
  }
}
