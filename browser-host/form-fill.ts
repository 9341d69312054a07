import type { Locator } from 'playwright-core';
import type { BrowserAction, FormField } from '../shared/tool-arguments.ts';
import { type DispatchPlan, NotApplicable, type PlanContext, type PlanStep, requireState } from './dispatch-plan.ts';
import { FILE_INPUT } from './upload.ts';

/** What a field is, read with Playwright's `:scope` selectors in its utility world (never the page's). */
type FieldKind = 'select' | 'checkbox' | 'radio' | 'text';

/** The element itself, when it is a `<select>`. */
const SELECT = ':scope:is(select)';
/** The element itself, when it is a checkbox or a switch (native or ARIA). */
const CHECKBOX = ':scope:is(input[type=checkbox i], [role=checkbox], [role=switch], [role=menuitemcheckbox])';
/** The element itself, when it is a radio button (native or ARIA). */
const RADIO = ':scope:is(input[type=radio i], [role=radio], [role=menuitemradio])';

type FillForm = Extract<BrowserAction, { action: 'fill_form' }>;

/**
 * The two phases of a fill_form (see {@link DispatchPlan}). The prechecks cover every field, then
 * the submit element, before any input, so a field that cannot take its value means nothing at all
 * is typed. Per field, by what the element is:
 * - a `<select>` takes a string, the value or label of one of its options (checked to exist):
 *   visible and enabled, then `selectOption`;
 * - a checkbox or switch takes a boolean: Playwright's trial `setChecked`, then `setChecked`;
 * - a radio button takes `true` only (a radio is unchecked by choosing another): trial `check`,
 *   then `check`;
 * - anything else takes a string and must be editable (text field, textarea, contenteditable,
 *   an editable combobox): visible and editable, then `fill`;
 * - a file input takes no value (an upload sets it);
 * a value of the wrong type for the element, or a select without that option, is `action_failed`.
 * Then `submit_reference` is clicked (trial click first, with the fields' prechecks), or
 * `submit_key` pressed on the last field.
 */
export function fillFormPlan(context: PlanContext, action: FillForm): DispatchPlan {
  const { page, timeout } = context;
  const precheck: PlanStep[] = [];
  const input: PlanStep[] = [];
  const fields = action.fields.map((field) => ({ field, target: page.getByRef(field.reference) }));
  for (const [index, { field, target }] of fields.entries()) {
    const about = `fill_form field ${index + 1} (${field.reference})`;
    const kind: { found?: FieldKind } = {};
    precheck.push({
      about,
      run: async () => {
        kind.found = await fieldKind(target, field);
        for (const step of fieldPrechecks(target, field, kind.found, timeout)) await step();
      },
    });
    input.push({ about, run: () => fillField(target, field, kind.found ?? 'text', timeout()) });
  }
  if (action.submit_reference !== undefined) {
    const submit = page.getByRef(action.submit_reference);
    const about = `fill_form submit (${action.submit_reference})`;
    precheck.push({ about, run: () => submit.click({ trial: true, timeout: timeout() }) });
    input.push({ about, run: () => submit.click({ force: true, timeout: timeout() }) });
  }
  const last = fields.at(-1);
  const key = action.submit_key;
  if (key !== undefined && last !== undefined) {
    input.push({ about: `fill_form submit key ${key} on ${last.field.reference}`, run: () => last.target.press(key, { timeout: timeout() }) });
  }
  return { precheck, input };
}

/** What `target` is, and whether it can take `field.value` at all. @throws NotApplicable */
async function fieldKind(target: Locator, field: FormField): Promise<FieldKind> {
  const is = async (selector: string) => (await target.locator(selector).count()) > 0;
  const kind: FieldKind = (await is(SELECT)) ? 'select' : (await is(CHECKBOX)) ? 'checkbox' : (await is(RADIO)) ? 'radio' : 'text';
  if (kind === 'text' && (await is(FILE_INPUT))) throw new NotApplicable('a file input takes no value: upload an attached file to it instead');
  const wanted = kind === 'checkbox' || kind === 'radio' ? 'boolean' : 'string';
  if (typeof field.value !== wanted) {
    throw new NotApplicable(`the element is a ${kind === 'text' ? 'text field' : kind}, which takes a ${wanted}, not ${JSON.stringify(field.value)}`);
  }
  if (kind === 'radio' && field.value === false) {
    throw new NotApplicable('a radio button cannot be set to false: choose another radio button of its group instead');
  }
  return kind;
}

/** The checks, sending no input, that `target` can take `field.value` now. */
function fieldPrechecks(target: Locator, field: FormField, kind: FieldKind, timeout: () => number): (() => Promise<unknown>)[] {
  const visible = () => target.waitFor({ state: 'visible', timeout: timeout() });
  switch (kind) {
    case 'select':
      return [
        visible,
        requireState('enabled', () => target.isEnabled({ timeout: timeout() })),
        async () => {
          if ((await optionsNamed(target, String(field.value)).count()) === 0) {
            throw new NotApplicable(`the select has no option with the value or label ${JSON.stringify(field.value)}`);
          }
        },
      ];
    case 'checkbox':
      return [() => target.setChecked(field.value === true, { trial: true, timeout: timeout() })];
    case 'radio':
      return [() => target.check({ trial: true, timeout: timeout() })];
    case 'text':
      return [visible, requireState('editable', () => target.isEditable({ timeout: timeout() }))];
  }
}

/** The options of a select whose value or label is `value` (as Playwright's `selectOption` matches a string). */
function optionsNamed(select: Locator, value: string): Locator {
  const quoted = JSON.stringify(value);
  const text = new RegExp(`^\\s*${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`);
  return select.locator(`option[value=${quoted}], option[label=${quoted}]`).or(select.locator('option:not([label])').filter({ hasText: text }));
}

/** Puts `field.value` into `target` as its kind takes it (see {@link fillFormPlan}); sends input. */
async function fillField(target: Locator, field: FormField, kind: FieldKind, timeoutMs: number): Promise<unknown> {
  switch (kind) {
    case 'select':
      return target.selectOption(String(field.value), { force: true, timeout: timeoutMs });
    case 'checkbox':
      return target.setChecked(field.value === true, { force: true, timeout: timeoutMs });
    case 'radio':
      return target.check({ force: true, timeout: timeoutMs });
    case 'text':
      return target.fill(String(field.value), { force: true, timeout: timeoutMs });
  }
}
