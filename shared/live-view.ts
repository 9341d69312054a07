import { z } from 'zod';
import { CeremonyId } from './authentication.ts';

/**
 * The live view of a sign-in ceremony (issue 16; ADR-0164: the owner's native sign-in is the one
 * human step): the host streams the ceremony's page as JPEG frames (Chromium's screencast) and
 * applies the person's pointer, wheel and keyboard input, through the edge, to the owner's page.
 *
 * On the wire (shared/protocol.ts) the edge opens a view with `liveview.open` on a connection of
 * its own; the host then sends `liveview.frame` and, once, `liveview.ended` notifications on that
 * connection (`{method, params}`, no id). The edge forwards the person's input and frame
 * acknowledgements with `liveview.input`. Between the edge and the owner's page the same frames,
 * input and acknowledgements travel as {@link ViewerMessage} and {@link ViewerCommand} JSON.
 */

/** Identifier of one live view on the host. */
export const LiveViewId = z.string().regex(/^view_[A-Za-z0-9_-]{8,64}$/);

/** Largest frame edge the viewer may ask for, in px. */
export const MAX_VIEW_EDGE_PX = 4_096;
/** Most input events in one `liveview.input`. */
export const MAX_INPUT_EVENTS = 64;
/** Longest text one `text` event inserts (a paste), in characters. */
export const MAX_INSERTED_TEXT = 10_000;
/** Frames the host sends ahead of the viewer's acknowledgements; the next waits (the queue is bounded). */
export const FRAMES_IN_FLIGHT = 2;

const coordinate = z.number().finite().min(0).max(MAX_VIEW_EDGE_PX);

/**
 * One input event of the person, in the px of the frame it was aimed at (`frame_seq`'s
 * `width` x `height`; the host maps it onto the page and refuses events outside it):
 * - `mouse`: move, press or release of `button` (`click_count` 1 for a click, 2 for a double);
 * - `wheel`: a scroll at `x`, `y` by `delta_x`, `delta_y` px;
 * - `key`: a key press or release by its DOM `key` name (`a`, `Enter`, `Tab`, `Shift`); held
 *   modifier keys apply to later keys and clicks, as on a keyboard;
 * - `text`: text inserted at the caret at once (an IME's composition result, a paste), never
 *   as key events.
 */
export const ViewInputEvent = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('mouse'),
    action: z.enum(['move', 'down', 'up']),
    x: coordinate,
    y: coordinate,
    button: z.enum(['left', 'middle', 'right', 'none']).default('none'),
    click_count: z.int().min(0).max(3).default(0),
  }),
  z.strictObject({
    type: z.literal('wheel'),
    x: coordinate,
    y: coordinate,
    delta_x: z.number().finite().min(-10_000).max(10_000),
    delta_y: z.number().finite().min(-10_000).max(10_000),
  }),
  z.strictObject({
    type: z.literal('key'),
    action: z.enum(['down', 'up']),
    key: z.string().min(1).max(32),
  }),
  z.strictObject({ type: z.literal('text'), text: z.string().min(1).max(MAX_INSERTED_TEXT) }),
]);
export type ViewInputEvent = z.infer<typeof ViewInputEvent>;

/** One screencast frame: `jpeg_base64` is `width` x `height` px, showing the page's viewport. */
export const ViewFrame = z.strictObject({
  view_id: LiveViewId,
  /** 1, 2, ... per view; the viewer acknowledges by it. */
  seq: z.int().min(1),
  jpeg_base64: z
    .string()
    .max(3 * 1024 * 1024)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/),
  width: z.int().min(1).max(MAX_VIEW_EDGE_PX),
  height: z.int().min(1).max(MAX_VIEW_EDGE_PX),
});
export type ViewFrame = z.infer<typeof ViewFrame>;

/**
 * Why a view ended: the ceremony got its outcome (`verified`, `not_verified`, ...), it was ended
 * or replaced (`ended`: abandoned, restarted, a newer view), the page went away, the viewer or
 * the edge closed it, or the host is shutting down.
 */
export const ViewEndReason = z.enum(['verified', 'account_mismatch', 'not_verified', 'ended', 'page_gone', 'closed', 'host_closing']);
export type ViewEndReason = z.infer<typeof ViewEndReason>;

/**
 * A sentence for the person about something the window refused while they signed in: a
 * navigation to an address or origin the host does not allow, a window a page tried to open.
 * Plain text, shown as it is (never markup).
 */
export const ViewNoticeMessage = z.string().min(1).max(500);

/** What the host sends on a view's connection without being asked. */
export const LiveViewNotification = z.discriminatedUnion('method', [
  z.strictObject({ method: z.literal('liveview.frame'), params: ViewFrame }),
  z.strictObject({ method: z.literal('liveview.ended'), params: z.strictObject({ view_id: LiveViewId, reason: ViewEndReason }) }),
  z.strictObject({ method: z.literal('liveview.notice'), params: z.strictObject({ view_id: LiveViewId, message: ViewNoticeMessage }) }),
]);
export type LiveViewNotification = z.infer<typeof LiveViewNotification>;

/** The live-view methods of the edge-host wire (merged into shared/protocol.ts `HOST_METHODS`). */
export const LIVE_VIEW_METHODS = {
  /**
   * Opens a view of the open ceremony `ceremony_id` (which must still be for `profile_id`,
   * `origin` and `generation`, and wait for a person): the host starts the screencast of the
   * ceremony's page only, frames at most `max_width` x `max_height` px, and sends them on this
   * connection. A newer view of the same ceremony ends the older one. The view ends with the
   * ceremony, with the page, with `liveview.close` or when this connection closes.
   */
  'liveview.open': {
    params: z.strictObject({
      ceremony_id: CeremonyId,
      profile_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/),
      origin: z.string().min(1).max(300),
      generation: z.int().min(1),
      max_width: z.int().min(64).max(MAX_VIEW_EDGE_PX),
      max_height: z.int().min(64).max(MAX_VIEW_EDGE_PX),
    }),
    result: z.strictObject({ view_id: LiveViewId }),
  },
  /**
   * The person's input (applied in order) and, with `ack`, the viewer has drawn frames up to that
   * seq. Events outside the frame they were aimed at are dropped; `applied` counts the rest.
   */
  'liveview.input': {
    params: z.strictObject({
      view_id: LiveViewId,
      ack: z.int().min(1).optional(),
      frame_seq: z.int().min(1).optional(),
      events: z.array(ViewInputEvent).max(MAX_INPUT_EVENTS).default([]),
    }),
    result: z.strictObject({ applied: z.int().min(0) }),
  },
  /** Ends a view (`{closed}` false when it had ended already). */
  'liveview.close': {
    params: z.strictObject({ view_id: LiveViewId }),
    result: z.strictObject({ closed: z.boolean() }),
  },
} as const;

/** What the owner's page sends the edge over the view's socket. */
export const ViewerCommand = z.discriminatedUnion('type', [
  /** The first message, once the socket is open: the view starts. */
  z.strictObject({ type: z.literal('hello') }),
  z.strictObject({ type: z.literal('ack'), seq: z.int().min(1) }),
  z.strictObject({ type: z.literal('input'), frame_seq: z.int().min(1), events: z.array(ViewInputEvent).min(1).max(MAX_INPUT_EVENTS) }),
  z.strictObject({ type: z.literal('close') }),
]);
export type ViewerCommand = z.infer<typeof ViewerCommand>;

/** What the edge sends the owner's page over the view's socket. */
export const ViewerMessage = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('frame'), seq: z.int().min(1), jpeg_base64: z.string(), width: z.int(), height: z.int() }),
  z.strictObject({ type: z.literal('ended'), reason: z.union([ViewEndReason, z.literal('unavailable')]), message: z.string().max(500) }),
  z.strictObject({ type: z.literal('notice'), message: ViewNoticeMessage }),
]);
export type ViewerMessage = z.infer<typeof ViewerMessage>;
