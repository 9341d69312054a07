import { z } from 'zod';
import { originOf } from './origin.ts';
import type { BrowserAction } from './tool-arguments.ts';

/**
 * The element an act targets, as the observation the agent acted on showed it (README
 * "Confinement": approvals are bound to what the owner saw): its reference, ARIA role and
 * accessible name (empty when it has none), the origin of the frame that holds it, the page's URL
 * and title at that revision, and the input the act would send (`text` for type, `option` for
 * select, `key` for press). The host checks role, name and frame right before the input
 * (`target_changed`).
 */
export const ActTarget = z.strictObject({
  reference: z.string().max(32),
  role: z.string().min(1).max(64),
  name: z.string().max(1000),
  frame_origin: z.string().max(300),
  page_url: z.string().max(4096),
  page_title: z.string().max(1000),
  text: z.string().max(10_000).optional(),
  option: z.string().max(1000).optional(),
  key: z.string().max(64).optional(),
});
export type ActTarget = z.infer<typeof ActTarget>;

const VERBS: Record<BrowserAction['action'], string> = {
  click: 'Click',
  type: 'Type',
  press: 'Press',
  select: 'Select',
  check: 'Check',
  uncheck: 'Uncheck',
  scroll: 'Scroll',
};

/**
 * What an act will do, in words an owner can judge, e.g.
 * `Click the button "Save draft" on "Drafts" (http://127.0.0.1:8080/drafts)` or
 * `Type "hello" into the textbox "Title" inside a frame of https://forms.example on ...`.
 * Quoted values are cut to 200 characters.
 */
export function describeAct(action: BrowserAction, target: ActTarget): string {
  const element = `the ${target.role}${target.name === '' ? ` ${target.reference} (no accessible name)` : ` ${quoted(target.name)}`}`;
  const pageOrigin = originOf(target.page_url) ?? 'null';
  const frame = target.frame_origin !== pageOrigin ? ` inside a frame of ${target.frame_origin}` : '';
  const page = ` on ${quoted(target.page_title === '' ? target.page_url : target.page_title)} (${target.page_url})`;
  switch (action.action) {
    case 'type':
      return `${VERBS.type} ${quoted(action.text)} into ${element}${action.submit === true ? ' and press Enter' : ''}${frame}${page}`;
    case 'select':
      return `${VERBS.select} ${quoted(action.value)} in ${element}${frame}${page}`;
    case 'press':
      return `${VERBS.press} ${action.key} on ${element}${frame}${page}`;
    case 'scroll':
      return `${VERBS.scroll} ${Math.abs(action.delta)} px ${action.delta < 0 ? 'up' : 'down'} over ${element}${frame}${page}`;
    default:
      return `${VERBS[action.action]} ${element}${frame}${page}`;
  }
}

function quoted(text: string): string {
  const cut = text.length > 200 ? `${text.slice(0, 200)}...` : text;
  return JSON.stringify(cut);
}
