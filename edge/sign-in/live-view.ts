import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import { jwtVerify, SignJWT } from 'jose';
import { type LiveViewNotification, MAX_INPUT_EVENTS, ViewerCommand, type ViewerMessage } from '../../shared/live-view.ts';
import { rowsChanged } from '../db/rows-changed.ts';
import { type ConsoleSessionRow, liveViews, signInEpisodes } from '../db/schema.ts';
import { HOST_CALL_MS, HOST_CONNECT_MS } from '../deadline.ts';
import { DomainError } from '../domain-error.ts';
import { connectToProfileHost } from '../fleet/host-connection.ts';
import { HostCallError, type HostSession } from '../host/host-session.ts';
import { sha256Hex } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';

/** How long a live-view link may be used to connect, in ms (issue 16: 5 minutes). */
export const LIVE_VIEW_LINK_MS = 5 * 60_000;
/** How long the record of a live-view link is kept after it expired, in ms (a day). */
export const LIVE_VIEW_RECORD_MS = 24 * 3_600_000;
/**
 * Most input events one view keeps waiting for the host (16 calls of {@link MAX_INPUT_EVENTS});
 * past it, input is dropped rather than queued without bound.
 */
export const MAX_WAITING_INPUT_EVENTS = 16 * MAX_INPUT_EVENTS;

const TOKEN = { issuer: 'governed-browser-edge', audience: 'owner-console', typ: 'live-view' } as const;

/** What a live-view link is bound to (issue 16): one ceremony, one owner session. */
export interface LiveViewGrant {
  /** The link's token id (its `jti`), stored hashed. */
  readonly linkId: string;
  readonly episodeId: string;
  readonly ceremonyId: string;
  readonly hostProfileId: string;
  readonly origin: string;
  readonly generation: number;
  readonly ownerId: string;
}

function keyOf(secret: string): Uint8Array {
  return new TextEncoder().encode(`live-view:${secret}`);
}

/**
 * Issues a single-use live-view link token for the owner's open sign-in episode `episodeId`,
 * bound to its ceremony (profile, origin, generation) and to `session`: a JWT (HS256, the edge's
 * secret) that can be used to connect once within {@link LIVE_VIEW_LINK_MS}; its id is stored
 * hashed in `live_views`.
 * @throws DomainError('not_found') for an episode that is not the owner's or not open.
 */
export async function issueLiveViewLink(ports: Ports, session: ConsoleSessionRow, episodeId: string): Promise<{ token: string; expiresAt: number }> {
  const episode = await ports.db
    .select()
    .from(signInEpisodes)
    .where(and(eq(signInEpisodes.id, episodeId), eq(signInEpisodes.ownerId, session.ownerId), eq(signInEpisodes.state, 'open')))
    .get();
  if (episode === undefined) throw new DomainError('not_found', 'no open sign-in of yours with that id');
  const now = ports.clock.now();
  const expiresAt = now + LIVE_VIEW_LINK_MS;
  const jti = crypto.randomUUID();
  const token = await new SignJWT({
    typ: TOKEN.typ,
    episode: episode.id,
    ceremony: episode.ceremonyId,
    profile: episode.hostProfileId,
    origin: episode.origin,
    generation: episode.generation,
    session: session.idHash,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(TOKEN.issuer)
    .setAudience(TOKEN.audience)
    .setSubject(session.ownerId)
    .setJti(jti)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(keyOf(ports.hostSecret));
  await ports.db.insert(liveViews).values({
    tokenHash: await sha256Hex(jti),
    ownerId: session.ownerId,
    sessionHash: session.idHash,
    episodeId: episode.id,
    createdAt: now,
    expiresAt,
  });
  return { token, expiresAt };
}

/**
 * What a link token grants, checked without using it up: its signature, expiry and the session
 * it was issued to (another owner's session, or another session of the same owner, gets nothing).
 * @throws DomainError('not_found') for a token that is not a valid link for `session`.
 */
export async function readLiveViewLink(ports: Ports, session: ConsoleSessionRow, token: string): Promise<LiveViewGrant> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, keyOf(ports.hostSecret), {
      issuer: TOKEN.issuer,
      audience: TOKEN.audience,
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'jti', 'sub'],
      currentDate: new Date(ports.clock.now()),
    }));
  } catch {
    throw new DomainError('not_found', 'that live-view link is not valid or has expired; open a new one from Sign-ins');
  }
  if (payload.typ !== TOKEN.typ || payload.sub !== session.ownerId || payload.session !== session.idHash) {
    throw new DomainError('not_found', 'that live-view link was issued to another console session; open a new one from Sign-ins');
  }
  return {
    linkId: String(payload.jti),
    episodeId: String(payload.episode),
    ceremonyId: String(payload.ceremony),
    hostProfileId: String(payload.profile),
    origin: String(payload.origin),
    generation: Number(payload.generation),
    ownerId: session.ownerId,
  };
}

/**
 * Uses a link to connect, once: a conditional update marks it used only while unused, unexpired
 * and the session's, and the episode must still be open at the same generation.
 * @throws DomainError('not_found') for an invalid link; DomainError('already_decided') for one
 *   used already; DomainError('run_not_active') when the sign-in is over or was restarted.
 */
export async function claimLiveView(ports: Ports, session: ConsoleSessionRow, token: string): Promise<LiveViewGrant> {
  const grant = await readLiveViewLink(ports, session, token);
  const now = ports.clock.now();
  const [used] = await ports.db
    .update(liveViews)
    .set({ usedAt: now })
    .where(
      and(
        eq(liveViews.tokenHash, await sha256Hex(grant.linkId)),
        eq(liveViews.sessionHash, session.idHash),
        isNull(liveViews.usedAt),
        gt(liveViews.expiresAt, now),
      ),
    )
    .returning({ episodeId: liveViews.episodeId });
  if (used === undefined) throw new DomainError('already_decided', 'that live-view link was used already; open a new one from Sign-ins');
  const episode = await ports.db
    .select({ state: signInEpisodes.state, generation: signInEpisodes.generation })
    .from(signInEpisodes)
    .where(eq(signInEpisodes.id, grant.episodeId))
    .get();
  if (episode?.state !== 'open' || episode.generation !== grant.generation) {
    throw new DomainError('run_not_active', 'that sign-in is over or was restarted; open a new live view from Sign-ins');
  }
  return grant;
}

/** The owner's side of a view: the socket to their page (Hono's WSContext has this shape). */
export interface ViewerSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** A relay between the owner's page and the host's view, built by {@link relayLiveView}. */
export interface LiveViewRelay {
  /** A message from the owner's page (a {@link ViewerCommand} as JSON text); anything else is ignored. */
  fromViewer(text: string): void;
  /** The owner's page went away: the view ends. */
  viewerClosed(): void;
}

/**
 * Relays one live view (issue 16), the same code on Workers, Deno and Node: opens a host
 * connection of its own, asks for `liveview.open` of the grant's ceremony with frames at most
 * `maxWidth` x `maxHeight` px, forwards every frame to the owner's page as a {@link ViewerMessage}
 * (frames that come before the open's answer wait for it) and the page's input to the host
 * (`liveview.input`, in order, one call at a time; what arrives meanwhile waits, gathered into
 * calls of at most {@link MAX_INPUT_EVENTS} events aimed at one frame, so a person typing faster
 * than the host answers loses no key; past {@link MAX_WAITING_INPUT_EVENTS} waiting events input
 * is dropped, never queued without bound) and its acknowledgements (never dropped: the newest is
 * sent once the previous one has answered). The view ends, and both
 * sockets close, when the host ends it (the ceremony's outcome, a restart), when the owner's page
 * closes or asks to, or when the host connection drops. Nothing typed is logged.
 */
export async function relayLiveView(ports: Ports, grant: LiveViewGrant, viewer: ViewerSocket, maxWidth: number, maxHeight: number): Promise<LiveViewRelay> {
  let ended = false;
  let session: HostSession | undefined;
  let viewId: string | undefined;
  const say = (message: ViewerMessage) => {
    try {
      viewer.send(JSON.stringify(message));
    } catch {
      // The owner's page is gone; its close ends the view.
    }
  };
  const end = (reason: Extract<ViewerMessage, { type: 'ended' }>['reason'], message: string) => {
    if (ended) return;
    ended = true;
    say({ type: 'ended', reason, message });
    void markEnded(ports, grant);
    const open = session;
    const view = viewId;
    if (open !== undefined && view !== undefined) {
      void open
        .call('liveview.close', { view_id: view }, HOST_CALL_MS)
        .catch(() => {})
        .finally(() => open.close());
    } else open?.close();
    try {
      viewer.close(1000, reason);
    } catch {
      // already closed
    }
  };
  // Input is applied in the order the person gave it, one call after the other. What arrives
  // while a call is out waits, gathered into calls of at most MAX_INPUT_EVENTS events aimed at one
  // frame; past MAX_WAITING_INPUT_EVENTS waiting, more is dropped. Acknowledgements are never
  // dropped: the newest is sent as soon as the one before has answered (the host sends nothing
  // more until it has one).
  const hostCall = (params: { ack?: number; frame_seq?: number; events: Extract<ViewerCommand, { type: 'input' }>['events'] }) => {
    const open = session;
    const view = viewId;
    if (ended || open === undefined || view === undefined) return Promise.resolve();
    return open
      .call('liveview.input', { view_id: view, ...params }, HOST_CALL_MS)
      .then(() => {})
      .catch((error: unknown) => {
        if (error instanceof HostCallError && error.code === 'not_found') end('ended', 'the live view has ended');
      });
  };
  type InputEvents = Extract<ViewerCommand, { type: 'input' }>['events'];
  const waiting: Array<{ frameSeq: number; events: InputEvents }> = [];
  let waitingEvents = 0;
  let sending = false;
  const sendWaiting = () => {
    const next = waiting.shift();
    if (ended || next === undefined) {
      sending = false;
      return;
    }
    sending = true;
    waitingEvents -= next.events.length;
    void hostCall({ frame_seq: next.frameSeq, events: next.events }).finally(sendWaiting);
  };
  const sendInput = (frameSeq: number, events: InputEvents) => {
    if (ended) return;
    const room = MAX_WAITING_INPUT_EVENTS - waitingEvents;
    for (const event of events.slice(0, Math.max(0, room))) {
      const last = waiting.at(-1);
      if (last !== undefined && last.frameSeq === frameSeq && last.events.length < MAX_INPUT_EVENTS) last.events.push(event);
      else waiting.push({ frameSeq, events: [event] });
      waitingEvents += 1;
    }
    if (!sending) sendWaiting();
  };
  let newestAck = 0;
  let sentAck = 0;
  let acking = false;
  const sendAck = (seq: number) => {
    newestAck = Math.max(newestAck, seq);
    if (acking || newestAck <= sentAck) return;
    acking = true;
    const seqToSend = newestAck;
    void hostCall({ ack: seqToSend, events: [] }).finally(() => {
      sentAck = Math.max(sentAck, seqToSend);
      acking = false;
      if (newestAck > sentAck) sendAck(newestAck);
    });
  };
  // Notifications that arrive before the host's answer to the open (its first frames) wait for it.
  const early: LiveViewNotification[] = [];
  const onNotification = (notification: LiveViewNotification) => {
    if (viewId === undefined) {
      if (early.length < 8) early.push(notification);
      return;
    }
    if (notification.params.view_id !== viewId) return;
    if (notification.method === 'liveview.frame') {
      const { seq, jpeg_base64, width, height } = notification.params;
      say({ type: 'frame', seq, jpeg_base64, width, height });
    } else if (notification.method === 'liveview.notice') say({ type: 'notice', message: notification.params.message });
    else end(notification.params.reason, endedInWords(notification.params.reason));
  };

  try {
    session = (await connectToProfileHost(ports, grant.hostProfileId, HOST_CONNECT_MS)).session;
    session.onNotification(onNotification);
    session.onClose(() => end('unavailable', 'the connection to the browser host was lost'));
    const opened = await session.call(
      'liveview.open',
      {
        ceremony_id: grant.ceremonyId,
        profile_id: grant.hostProfileId,
        origin: grant.origin,
        generation: grant.generation,
        max_width: maxWidth,
        max_height: maxHeight,
      },
      HOST_CALL_MS,
    );
    viewId = opened.view_id;
    for (const notification of early.splice(0)) onNotification(notification);
  } catch (error) {
    const code = error instanceof HostCallError ? error.code : undefined;
    end('unavailable', openRefusedInWords(code));
  }

  return {
    fromViewer: (text) => {
      let command: ViewerCommand | undefined;
      try {
        command = parseCommand(text);
      } catch {
        return;
      }
      if (command === undefined) return;
      if (command.type === 'hello') return;
      if (command.type === 'close') end('closed', 'you closed the live view');
      else if (command.type === 'ack') sendAck(command.seq);
      else sendInput(command.frame_seq, command.events.slice(0, MAX_INPUT_EVENTS));
    },
    viewerClosed: () => end('closed', 'you closed the live view'),
  };
}

/** A viewer command from JSON text, or undefined when it is not one. */
function parseCommand(text: string): ViewerCommand | undefined {
  if (text.length > 64 * 1024) return undefined;
  const parsed = ViewerCommand.safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : undefined;
}

/** Why a view could not open, for the owner, from the host's error code. */
function openRefusedInWords(code: string | undefined): string {
  switch (code) {
    case 'not_found':
      return 'the sign-in window is not waiting for you (it is over, or being checked); reload Sign-ins';
    case 'page_changed':
      return 'the sign-in window went away; reload Sign-ins and open a new live view';
    case 'admission_full':
      return 'too many live views are open on the browser host; close one and try again';
    default:
      return 'the browser host is not reachable now';
  }
}

function endedInWords(reason: string): string {
  switch (reason) {
    case 'verified':
      return 'you are signed in: the host verified it, and the run goes on by itself';
    case 'account_mismatch':
      return 'you signed in as another account than the one this profile is for';
    case 'not_verified':
      return 'the sign-in window timed out before a sign-in was verified';
    case 'page_gone':
      return 'the sign-in window went away; open a new live view from Sign-ins';
    case 'closed':
      return 'the live view was closed';
    case 'host_closing':
      return 'the browser host is shutting down';
    default:
      return 'the sign-in was ended or restarted; open a new live view from Sign-ins';
  }
}

/** Records when a used link's view ended (best effort: the row is for the record only). */
async function markEnded(ports: Ports, grant: LiveViewGrant): Promise<void> {
  try {
    await ports.db
      .update(liveViews)
      .set({ endedAt: ports.clock.now() })
      .where(and(eq(liveViews.tokenHash, await sha256Hex(grant.linkId)), isNull(liveViews.endedAt)));
  } catch {
    // The record of the end is not needed for anything to work.
  }
}

/**
 * The cron pass's clean-up of live-view links: removes the records of links that expired more
 * than a day before `now` (epoch ms), in one statement. A link's record is only needed while it
 * can still be used.
 * @returns how many it removed.
 */
export async function removeOldLiveViewLinks(ports: Ports, now: number): Promise<number> {
  const removed = await ports.db
    .delete(liveViews)
    .where(lt(liveViews.expiresAt, now - LIVE_VIEW_RECORD_MS))
    .run();
  return rowsChanged(removed);
}
