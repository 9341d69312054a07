import { Hono } from 'hono';
import { html } from 'hono/html';
import { MAX_VIEW_EDGE_PX } from '../../shared/live-view.ts';
import { DomainError } from '../domain-error.ts';
import { claimLiveView, type LiveViewRelay, readLiveViewLink, relayLiveView } from '../sign-in/live-view.ts';
import { layout, liveViewPage } from './pages.ts';
import type { ConsoleEnv } from './session-guard.ts';

/**
 * The live view (issue 16): its page, and its socket, which uses the single-use link once, from
 * the console's own origin, and relays frames and input between the owner and the host.
 */
export const liveViewRoutes = new Hono<ConsoleEnv>()
  .get('/console/live/:token', async (c) => {
    try {
      const grant = await readLiveViewLink(c.var.ports, c.var.session, c.req.param('token'));
      return c.html(liveViewPage(c.req.param('token'), grant.origin, c.var.session.csrfToken));
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      return c.html(layout('Live view', html`<p class="error" role="alert">${error.message}.</p>`, { csrfToken: c.var.session.csrfToken }), 404);
    }
  })
  // The view's socket: the link is used here, once, by the session it was issued to.
  .get('/console/live/:token/socket', async (c) => {
    const upgrade = c.var.ports.upgradeWebSocket;
    if (upgrade === undefined) throw new DomainError('not_found', 'this edge has no live view');
    if (c.req.header('Upgrade')?.toLowerCase() !== 'websocket') throw new DomainError('invalid_request', 'the live view is a WebSocket');
    // A page of another site cannot open it with the owner's cookie (cross-site WebSocket hijacking).
    if (c.req.header('Origin') !== new URL(c.req.url).origin) throw new DomainError('forbidden', 'the live view opens only from the console');
    const grant = await claimLiveView(c.var.ports, c.var.session, c.req.param('token'));
    const size = (value: string | undefined, fallback: number) => Math.min(MAX_VIEW_EDGE_PX, Math.max(64, Math.round(Number(value) || fallback)));
    const width = size(c.req.query('w'), 1280);
    const height = size(c.req.query('h'), 720);
    const ports = c.var.ports;
    let relay: LiveViewRelay | undefined;
    let starting = false;
    const early: string[] = [];
    let closedEarly = false;
    // The page speaks first (`hello`): Workers' server sockets have no open event, so the relay
    // starts with the first message, the same on every runtime.
    return upgrade(c, {
      onMessage: (event, socket) => {
        const text = typeof event.data === 'string' ? event.data : '';
        if (relay !== undefined) return relay.fromViewer(text);
        if (!starting) {
          starting = true;
          void relayLiveView(ports, grant, socket, width, height).then((started) => {
            relay = started;
            for (const queued of early.splice(0)) started.fromViewer(queued);
            if (closedEarly) started.viewerClosed();
          });
        } else if (early.length < 16) early.push(text);
      },
      onClose: () => {
        if (relay !== undefined) relay.viewerClosed();
        else closedEarly = true;
      },
    });
  });
