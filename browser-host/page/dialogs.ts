import { performance } from 'node:perf_hooks';
import type { Dialog, Page } from 'playwright-core';
import { MAX_DIALOG_MESSAGE_LENGTH, PageDialog } from '../../shared/observation.ts';
import type { PageEvents } from './events.ts';

/** More dialogs than this within {@link DIALOG_LOOP_WINDOW_MS} are a dialog loop. */
const DIALOG_LOOP_LIMIT = 5;
/** The span a dialog loop is counted over, in ms. */
const DIALOG_LOOP_WINDOW_MS = 1_000;

type DialogType = PageDialog['type'];
type DialogAnswer = PageDialog['answer'];

/**
 * How the host answers the JavaScript dialogs of the page it drives (README "Confinement";
 * shared/observation.ts `PageDialog`). A dialog holds the page's main thread until it is answered,
 * so nothing could read the page meanwhile; the host answers each one at once, never a person
 * or an agent:
 * - `alert` is accepted; `confirm` and `prompt` are dismissed (the page reads `false` and `null`);
 * - `beforeunload` is accepted while the host itself leaves the page (see {@link hostNavigation}:
 *   the agent's `page.navigate`, showing a sign-in page), and dismissed otherwise: a navigation the page started (a click on a link, a script)
 *   does not happen and the page stays;
 * - a dialog loop, more than 5 dialogs within 1,000 ms, ends the page: that dialog is left
 *   unanswered and the page's `endPage` is called (the browser closes and replaces it).
 * Every dialog is recorded in `events` (`{type, message, answer}`, the message cut to 300
 * characters) for the next observation; the one that ended the page with answer `page_closed`.
 * One per profile browser; temporary pages do not use it (they dismiss everything, unrecorded).
 */
export class PageDialogs {
  readonly #events: PageEvents;
  /** Navigations the host is performing right now. */
  #hostNavigations = 0;

  constructor(events: PageEvents) {
    this.#events = events;
  }

  /**
   * Answers every dialog `page` raises until the returned function detaches the handler;
   * `endPage` is called once, on the first dialog loop, and later dialogs of the page are
   * dismissed unrecorded.
   */
  attach(page: Page, endPage: () => void): () => void {
    const recent: number[] = [];
    let ended = false;
    const onDialog = (dialog: Dialog): void => {
      if (ended) {
        dialog.dismiss().catch(() => {});
        return;
      }
      const now = performance.now();
      recent.push(now);
      while ((recent[0] ?? now) <= now - DIALOG_LOOP_WINDOW_MS) recent.shift();
      const type = dialogType(dialog);
      if (recent.length > DIALOG_LOOP_LIMIT) {
        ended = true;
        this.#record(type, dialog, 'page_closed');
        endPage();
        return;
      }
      const answer = this.#answerTo(type);
      this.#record(type, dialog, answer);
      (answer === 'accepted' ? dialog.accept() : dialog.dismiss()).catch(() => {});
    };
    page.on('dialog', onDialog);
    return () => page.off('dialog', onDialog);
  }

  /**
   * Runs `navigation`, one the host itself performs on the driven page; a `beforeunload` dialog
   * raised meanwhile is accepted, so the page cannot keep the host on it. Resolves or rejects as
   * `navigation` does.
   */
  async hostNavigation<T>(navigation: () => Promise<T>): Promise<T> {
    this.#hostNavigations += 1;
    try {
      return await navigation();
    } finally {
      this.#hostNavigations -= 1;
    }
  }

  #answerTo(type: DialogType | undefined): Exclude<DialogAnswer, 'page_closed'> {
    if (type === 'alert') return 'accepted';
    if (type === 'beforeunload' && this.#hostNavigations > 0) return 'accepted';
    return 'dismissed';
  }

  #record(type: DialogType | undefined, dialog: Dialog, answer: DialogAnswer): void {
    if (type === undefined) return;
    this.#events.dialog({ type, message: cut(dialog.message()), answer });
  }
}

/** The dialog's type as the observation names it; undefined for a kind Chromium may add later. */
function dialogType(dialog: Dialog): DialogType | undefined {
  const parsed = PageDialog.shape.type.safeParse(dialog.type());
  return parsed.success ? parsed.data : undefined;
}

/** `message` cut to 300 characters, the last one an ellipsis when anything was cut. */
function cut(message: string): string {
  return message.length > MAX_DIALOG_MESSAGE_LENGTH ? `${message.slice(0, MAX_DIALOG_MESSAGE_LENGTH - 1)}…` : message;
}
