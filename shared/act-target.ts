import { z } from 'zod';
import { originOf } from './origin.ts';
import type { BrowserAction } from './tool-arguments.ts';

/**
 * One further element an act touches (1.5.0: a drag's destination, a fill_form's field or submit
 * button), as the observation showed it: reference, role, accessible name, frame origin, and for a
 * field the value it will be given.
 */
export const ElementTarget = z.strictObject({
  reference: z.string().max(32),
  role: z.string().min(1).max(64),
  name: z.string().max(1000),
  frame_origin: z.string().max(300),
  value: z.union([z.string().max(10_000), z.boolean()]).optional(),
});
export type ElementTarget = z.infer<typeof ElementTarget>;

/** The attached file an upload sets, as the owner is shown it (issue 33): id, name, size in bytes and type. */
export const TargetFile = z.strictObject({
  id: z.string().max(80),
  name: z.string().max(255),
  bytes: z.int().min(0),
  mime_type: z.string().max(200),
});
export type TargetFile = z.infer<typeof TargetFile>;

/**
 * The element an act targets, as the observation the agent acted on showed it (README
 * "Confinement": approvals are bound to what the owner saw): its reference, ARIA role and
 * accessible name (empty when it has none), the origin of the frame that holds it, the page's URL
 * and title at that revision, and the input the act would send (`text` for type, `option` for
 * select, `key` for press). The host checks role, name and frame right before the input
 * (`target_changed`). 1.5.0 adds the point the agent named, a drag's destination, a
 * fill_form's fields and submit button, and an upload's file.
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
  /** 1.5.0: the point the agent named, when it named one; `reference` is what the host found there. */
  point: z.strictObject({ x: z.number(), y: z.number() }).optional(),
  /** 1.5.0: a drag's destination. */
  destination: ElementTarget.optional(),
  /** 1.5.0: a fill_form's fields in order (the first is also `reference`, `role`, `name`). */
  fields: z.array(ElementTarget).max(32).optional(),
  /** 1.5.0: a fill_form's submit button (`submit_reference`); a submit key is `key`. */
  submit: ElementTarget.optional(),
  /** 1.5.0: the attached file an upload sets. */
  file: TargetFile.optional(),
});
export type ActTarget = z.infer<typeof ActTarget>;

/**
 * The origins of the frames holding every element an act touches (its own element first, then a
 * drag's destination, a fill_form's fields and submit button), each once: what policy's origin
 * rules, operator denies and grants decide on.
 */
export function frameOriginsOf(target: ActTarget): string[] {
  const elements = [target, ...(target.destination ? [target.destination] : []), ...(target.fields ?? []), ...(target.submit ? [target.submit] : [])];
  return [...new Set(elements.map((element) => element.frame_origin))];
}

const VERBS: Record<BrowserAction['action'], string> = {
  click: 'Click',
  type: 'Type',
  press: 'Press',
  select: 'Select',
  check: 'Check',
  uncheck: 'Uncheck',
  scroll: 'Scroll',
  hover: 'Hover over',
  drag: 'Drag',
  fill_form: 'Fill in',
  upload: 'Upload',
};

/**
 * What an act will do, in words an owner can judge, e.g.
 * `Click the button "Save draft" on "Drafts" (http://127.0.0.1:8080/drafts)` or
 * `Type "hello" into the textbox "Title" inside a frame of https://forms.example on ...`.
 * Quoted values are cut to 200 characters.
 */
export function describeAct(action: BrowserAction, target: ActTarget): string {
  const pageOrigin = originOf(target.page_url) ?? 'null';
  const element = elementWords(target, pageOrigin, false);
  const frame = target.frame_origin !== pageOrigin ? ` inside a frame of ${target.frame_origin}` : '';
  const page = ` on ${quoted(target.page_title === '' ? target.page_url : target.page_title)} (${target.page_url})`;
  const at = target.point === undefined ? '' : ` (the point ${Math.round(target.point.x)},${Math.round(target.point.y)} of the page's picture)`;
  switch (action.action) {
    case 'type':
      return `${VERBS.type} ${quoted(action.text)} into ${element}${at}${action.submit === true ? ' and press Enter' : ''}${frame}${page}`;
    case 'select':
      return `${VERBS.select} ${quoted(action.value)} in ${element}${at}${frame}${page}`;
    case 'press':
      return `${VERBS.press} ${action.key} on ${element}${at}${frame}${page}`;
    case 'scroll':
      return `${VERBS.scroll} ${Math.abs(action.delta)} px ${action.delta < 0 ? 'up' : 'down'} over ${element}${at}${frame}${page}`;
    case 'drag': {
      const destination = target.destination === undefined ? `the element ${action.to_reference}` : elementWords(target.destination, pageOrigin);
      return `${VERBS.drag} ${element}${at}${frame} onto ${destination}${page}`;
    }
    case 'upload': {
      const file =
        target.file === undefined
          ? `the attached file ${action.file_id}`
          : `the file ${quoted(target.file.name)} (${target.file.bytes} bytes, ${target.file.mime_type})`;
      return `${VERBS.upload} ${file} into ${element}${at}${frame}${page}`;
    }
    case 'fill_form':
      return `${VERBS.fill_form} a form${page}: ${fillFormSteps(action, target, pageOrigin).join('; ')}`;
    default:
      return `${VERBS[action.action]} ${element}${at}${frame}${page}`;
  }
}

/**
 * One sentence per field of a fill_form, in order, and one for its submit: "Type \"Ada\" into the
 * textbox \"First name\"", "Select \"DE\" in the combobox \"Country\"", "Check the checkbox
 * \"Terms\"", "Click the button \"Send\"", "Press Enter".
 */
export function fillFormSteps(
  action: Extract<BrowserAction, { action: 'fill_form' }>,
  target: ActTarget,
  pageOrigin = originOf(target.page_url) ?? 'null',
): string[] {
  const steps = action.fields.map((field, index) => {
    const known = target.fields?.[index];
    const element = known === undefined || known.reference !== field.reference ? `the element ${field.reference}` : elementWords(known, pageOrigin);
    if (typeof field.value === 'boolean') return `${field.value ? VERBS.check : VERBS.uncheck} ${element}`;
    if (known?.role === 'combobox' || known?.role === 'listbox') return `${VERBS.select} ${quoted(field.value)} in ${element}`;
    return `${VERBS.type} ${quoted(field.value)} into ${element}`;
  });
  if (action.submit_reference !== undefined) {
    const submit = target.submit?.reference === action.submit_reference ? elementWords(target.submit, pageOrigin) : `the element ${action.submit_reference}`;
    steps.push(`${VERBS.click} ${submit}`);
  }
  if (action.submit_key !== undefined) steps.push(`${VERBS.press} ${action.submit_key}`);
  return steps;
}

/** "the button \"Save\"", or "the textbox e12 (no accessible name)", with its frame when not the page's. */
function elementWords(element: { reference: string; role: string; name: string; frame_origin: string }, pageOrigin: string, withFrame = true): string {
  const named = `the ${element.role}${element.name === '' ? ` ${element.reference} (no accessible name)` : ` ${quoted(element.name)}`}`;
  return withFrame && element.frame_origin !== pageOrigin ? `${named} inside a frame of ${element.frame_origin}` : named;
}

/**
 * Characters JSON leaves as they are that would make a quoted text read otherwise in an approval:
 * C1 controls, invisible format characters (bidirectional overrides and isolates, zero-width
 * spaces) and line and paragraph separators.
 */
const UNSHOWN_IN_QUOTES = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `text` (agent's or page's) in double quotes, cut to 200 characters, escaped as JSON and every {@link UNSHOWN_IN_QUOTES} as `\uXXXX` (its UTF-16 units). */
function quoted(text: string): string {
  const cut = text.length > 200 ? `${text.slice(0, 200)}...` : text;
  const escaped = (character: string) =>
    Array.from({ length: character.length }, (_, unit) => `\\u${character.charCodeAt(unit).toString(16).padStart(4, '0')}`);
  return JSON.stringify(cut).replace(UNSHOWN_IN_QUOTES, (character) => escaped(character).join(''));
}
