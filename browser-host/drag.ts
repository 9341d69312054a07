import type { Locator, Page } from 'playwright-core';
import type { BrowserAction } from '../shared/tool-arguments.ts';
import type { DispatchPlan, PlanContext } from './dispatch-plan.ts';

/** Pointer moves from the source to the destination while the button is down. */
const DRAG_STEPS = 10;
/** Pause between two of those moves, in ms: about a frame, as a person's pointer moves. */
const DRAG_STEP_PAUSE_MS = 20;
/** Pause over the destination before the release, in ms, for the page to take the last moves in. */
const DROP_PAUSE_MS = 60;

/**
 * The two phases of a drag (see {@link DispatchPlan}): Playwright's trial drag, the actionability
 * of the source and of the destination (attached, visible, stable, receiving events) with no
 * input; then a real pointer drag as a person makes it: press on the source (scrolled into view),
 * a short move that starts the drag, {@link DRAG_STEPS} paced moves to where the destination was
 * when the drag started, a moment there, release. A destination outside the viewport once the
 * source is in view is not scrolled to (a person would drag to the edge and wait).
 * Drag-and-drop libraries start a drag only once the pointer moved with the button down and decide
 * where an item lands from the moves they see over the destination (SortableJS drops nothing on a
 * pointer that jumps there), so the moves are paced, a frame apart. In Chromium, Playwright turns
 * them into native HTML5 drag and drop when the page starts one (`dragstart`), so pages using
 * either pointer events or native drag and drop get what a person's drag makes.
 */
export function dragPlan(context: PlanContext, action: Extract<BrowserAction, { action: 'drag' }>): DispatchPlan {
  const { page, timeout } = context;
  const source = page.getByRef(action.reference);
  const destination = page.getByRef(action.to_reference);
  const about = `drag from ${action.reference} to ${action.to_reference}`;
  return {
    precheck: [{ about, run: () => source.dragTo(destination, { trial: true, timeout: timeout() }) }],
    input: [{ about, run: () => pointerDrag(page, source, destination, timeout) }],
  };
}

/** Presses on `source`, moves in paced steps to `destination` and releases there; see {@link dragPlan}. */
async function pointerDrag(page: Page, source: Locator, destination: Locator, timeout: () => number): Promise<void> {
  await source.hover({ force: true, timeout: timeout() });
  const start = centreOf(await source.boundingBox({ timeout: timeout() }));
  // Where the destination is when the drag starts: the point a person aims at. It is never
  // measured again, as the page moves items under the pointer while it is dragged over them.
  const end = centreOf(await destination.boundingBox({ timeout: timeout() }));
  await page.mouse.down();
  try {
    await page.mouse.move(start.x + 4, start.y + 4);
    await pause(DRAG_STEP_PAUSE_MS);
    for (let step = 1; step <= DRAG_STEPS; step += 1) {
      await page.mouse.move(start.x + ((end.x - start.x) * step) / DRAG_STEPS, start.y + ((end.y - start.y) * step) / DRAG_STEPS);
      await pause(DRAG_STEP_PAUSE_MS);
    }
    await pause(DROP_PAUSE_MS);
  } finally {
    // Never leave the button down: the page would take every later move for a drag.
    await page.mouse.up();
  }
}

/** The centre of a box, in viewport CSS px. @throws Error when the element has no box (not rendered) */
function centreOf(box: { x: number; y: number; width: number; height: number } | null): { x: number; y: number } {
  if (box === null) throw new Error('the element is not rendered: it has no box to drag from or to');
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
