import type { BrowserAction } from '../shared/tool-arguments.ts';
import type { DispatchPlan, PlanContext } from './dispatch-plan.ts';

/**
 * Pointer moves between the press on the source and the release on the destination: drag-and-drop
 * libraries (SortableJS, native HTML5 drag and drop) start a drag only after the pointer has moved
 * with the button down, and decide where an item lands from the moves over the destination.
 */
const DRAG_STEPS = 12;

/**
 * The two phases of a drag (see {@link DispatchPlan}): Playwright's trial drag, the actionability
 * of the source and of the destination (attached, visible, stable, receiving events) with no
 * input; then a real pointer drag, press on the source, {@link DRAG_STEPS} moves to the
 * destination and release there. In Chromium, Playwright turns it into native HTML5 drag and drop
 * when the page starts one (`dragstart`), so libraries using either pointer events or native drag
 * and drop see what a person's drag makes.
 */
export function dragPlan(context: PlanContext, action: Extract<BrowserAction, { action: 'drag' }>): DispatchPlan {
  const { page, timeout } = context;
  const source = page.getByRef(action.reference);
  const destination = page.getByRef(action.to_reference);
  const about = `drag from ${action.reference} to ${action.to_reference}`;
  return {
    precheck: [{ about, run: () => source.dragTo(destination, { trial: true, timeout: timeout() }) }],
    input: [{ about, run: () => source.dragTo(destination, { force: true, steps: DRAG_STEPS, timeout: timeout() }) }],
  };
}
