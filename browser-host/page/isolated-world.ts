import type { CDPSession, Page } from 'playwright-core';
import type { Deadline } from '../deadline.ts';
import { openCdpSession } from './cdp-session.ts';

/** The name of the host's own isolated world in a page's main frame; a page never sees it. */
const WORLD_NAME = '__governed_browser_host__';

/** What CDP `Runtime.evaluate` answers. */
interface EvaluateAnswer {
  result?: { value?: unknown };
  exceptionDetails?: { text?: string; exception?: { description?: string } };
}

/**
 * The host's isolated world in the main frame of one page (CDP `Page.createIsolatedWorld`): its
 * own globals (`MutationObserver`, `performance`, `setTimeout`, `Promise`, `Array.prototype`, the
 * `document` wrapper's properties) over the page's DOM, so a page's scripts can neither replace
 * what a read there leans on nor see it. One per page ({@link isolatedWorldOf}); a new document
 * gets a new world on the next evaluation.
 */
export class IsolatedWorld {
  readonly #page: Page;
  #session: Promise<CDPSession> | undefined;
  #contextId: number | undefined;

  constructor(page: Page) {
    this.#page = page;
  }

  /**
   * Evaluates `expression` (the host's own fixed code, never anything a page or an agent
   * supplied) in the isolated world of the current main-frame document, awaits a promise it
   * returns and answers its JSON value, raced against `deadline`.
   * @throws HostError('deadline_exceeded') when the deadline passes first; an Error when the
   *   expression throws or rejects, or the document went away under it (the caller waits for the
   *   next one).
   */
  async evaluate<T>(deadline: Deadline, expression: string): Promise<T> {
    const session = await this.#sessionWithin(deadline);
    let contextId = this.#contextId ?? (await this.#createWorld(deadline, session));
    let answer: EvaluateAnswer;
    try {
      answer = await this.#evaluateIn(deadline, session, contextId, expression);
    } catch (error) {
      // The cached world belonged to a document that has gone: make one in the current document
      // and try once more; any other failure is the caller's.
      if (!/context/i.test(error instanceof Error ? error.message : String(error))) throw error;
      contextId = await this.#createWorld(deadline, session);
      answer = await this.#evaluateIn(deadline, session, contextId, expression);
    }
    if (answer.exceptionDetails !== undefined) {
      throw new Error(answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text ?? 'evaluation failed');
    }
    return answer.result?.value as T;
  }

  /**
   * Runs `use` (the host's own reads, never input) with this world's CDP session and the id of the
   * world's context in the current main-frame document, made on first use; when `use` fails for a
   * context that has gone (the document was replaced), once more in a new world of the current
   * document. Remote objects `use` makes live in this session until the document goes.
   * @throws HostError('deadline_exceeded') when the deadline passes first; whatever `use` throws.
   */
  async withContext<T>(deadline: Deadline, use: (session: CDPSession, contextId: number) => Promise<T>): Promise<T> {
    const session = await this.#sessionWithin(deadline);
    const contextId = this.#contextId ?? (await this.#createWorld(deadline, session));
    try {
      return await use(session, contextId);
    } catch (error) {
      if (!/context/i.test(error instanceof Error ? error.message : String(error))) throw error;
      return use(session, await this.#createWorld(deadline, session));
    }
  }

  #sessionWithin(deadline: Deadline): Promise<CDPSession> {
    if (this.#session !== undefined) return this.#session;
    const opening = openCdpSession(deadline, this.#page);
    this.#session = opening;
    // A failed opening (deadline, closing page) is not kept: the next evaluation tries again.
    opening.catch(() => {
      if (this.#session === opening) this.#session = undefined;
    });
    return opening;
  }

  async #createWorld(deadline: Deadline, session: CDPSession): Promise<number> {
    this.#contextId = undefined;
    const { frameTree } = (await deadline.race(session.send('Page.getFrameTree'))) as { frameTree: { frame: { id: string } } };
    const { executionContextId } = (await deadline.race(
      session.send('Page.createIsolatedWorld', { frameId: frameTree.frame.id, worldName: WORLD_NAME, grantUniveralAccess: false }),
    )) as { executionContextId: number };
    this.#contextId = executionContextId;
    return executionContextId;
  }

  #evaluateIn(deadline: Deadline, session: CDPSession, contextId: number, expression: string): Promise<EvaluateAnswer> {
    return deadline.race(session.send('Runtime.evaluate', { expression, contextId, awaitPromise: true, returnByValue: true }) as Promise<EvaluateAnswer>);
  }
}

const worlds = new WeakMap<Page, IsolatedWorld>();

/** The host's isolated world of `page`, made on first use and kept for the page's life. */
export function isolatedWorldOf(page: Page): IsolatedWorld {
  let world = worlds.get(page);
  if (world === undefined) {
    world = new IsolatedWorld(page);
    worlds.set(page, world);
  }
  return world;
}
