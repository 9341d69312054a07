import type { UploadFile } from '../shared/protocol.ts';
import type { BrowserAction } from '../shared/tool-arguments.ts';
import { type DispatchPlan, NotApplicable, type PlanContext, requireState, stepsAbout } from './dispatch-plan.ts';

/** Matches the element itself (Playwright's `:scope`, read in its utility world) when it is a file input. */
export const FILE_INPUT = ':scope:is(input[type=file i])';

/**
 * The two phases of an upload (see {@link DispatchPlan}): the element must be a file input
 * (`action_failed` otherwise: nothing is sent) and enabled, with no input; then the attached
 * `file` is set as the input's file, from its bytes in memory (the host writes no copy to disk),
 * which fires the page's `input` and `change` events as a person's choice would. A file input
 * need not be visible: pages often hide it behind a styled label.
 */
export function uploadPlan(context: PlanContext, action: Extract<BrowserAction, { action: 'upload' }>, file: UploadFile): DispatchPlan {
  const { page, timeout } = context;
  const target = page.getByRef(action.reference);
  const about = `upload of ${file.file_id} on ${action.reference}`;
  return {
    precheck: stepsAbout(
      about,
      async () => {
        if ((await target.locator(FILE_INPUT).count()) === 0) throw new NotApplicable('the element is not a file input');
      },
      requireState('enabled', () => target.isEnabled({ timeout: timeout() })),
    ),
    input: stepsAbout(about, () =>
      target.setInputFiles({ name: file.name, mimeType: file.mime_type, buffer: Buffer.from(file.data_base64, 'base64') }, { timeout: timeout() }),
    ),
  };
}
