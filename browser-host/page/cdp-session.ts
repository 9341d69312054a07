import type { CDPSession, Page } from 'playwright-core';
import type { Deadline } from '../deadline.ts';

/**
 * Opens a CDP session on `page`'s target, bounded by `deadline`. A session that opens only after
 * the deadline has passed is detached at once, so a slow browser never leaks one.
 * @throws HostError('deadline_exceeded') when the deadline passes first; Playwright's error when
 *   the page or its browser has closed.
 */
export async function openCdpSession(deadline: Deadline, page: Page): Promise<CDPSession> {
  const opening = page.context().newCDPSession(page);
  try {
    return await deadline.race(opening);
  } catch (error) {
    void opening.then((late) => late.detach()).catch(() => {});
    throw error;
  }
}

/**
 * Runs `use` with a CDP session on `page`'s target that lives only for the call: opened within
 * `deadline` ({@link openCdpSession}) and detached afterwards whatever `use` did, without waiting
 * for the browser's answer to the detach. The one way the host opens a short-lived CDP session;
 * sessions that follow a page for its life (the live view, egress confinement, settling's
 * isolated world) keep theirs.
 * @throws what {@link openCdpSession} or `use` throws.
 */
export async function withCdpSession<T>(deadline: Deadline, page: Page, use: (session: CDPSession) => Promise<T>): Promise<T> {
  const session = await openCdpSession(deadline, page);
  try {
    return await use(session);
  } finally {
    void session.detach().catch(() => {});
  }
}
