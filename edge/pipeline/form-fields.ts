import type { ElementTarget } from '../../shared/act-target.ts';
import type { FormField } from '../../shared/tool-arguments.ts';

/** ARIA roles a fill_form field with a string value may have: text fields, selects and comboboxes, number and range inputs. */
export const TEXT_FIELD_ROLES: ReadonlySet<string> = new Set(['textbox', 'searchbox', 'combobox', 'listbox', 'spinbutton', 'slider']);
/** ARIA roles a fill_form field with a boolean value may have: `true` checks, `false` unchecks. */
export const CHECKABLE_ROLES: ReadonlySet<string> = new Set(['checkbox', 'switch', 'menuitemcheckbox']);
/** ARIA roles a fill_form field may have only with `true`: a radio button is checked by choosing another, never unchecked. */
export const RADIO_ROLES: ReadonlySet<string> = new Set(['radio', 'menuitemradio']);

/**
 * Why `element` (as the observation showed it) cannot take a fill_form field's value, in words
 * naming the field, or undefined when it can: a string goes only into a {@link TEXT_FIELD_ROLES}
 * element, a boolean only into a {@link CHECKABLE_ROLES} element, and `true` also into a
 * {@link RADIO_ROLES} one.
 */
export function fieldRefusal(field: FormField, element: Pick<ElementTarget, 'reference' | 'role' | 'name'>): string | undefined {
  const which = `field ${field.reference} (the ${element.role} ${JSON.stringify(element.name)})`;
  if (typeof field.value === 'string') {
    return TEXT_FIELD_ROLES.has(element.role)
      ? undefined
      : `${which} cannot take the text ${JSON.stringify(field.value.slice(0, 80))}: text goes into a textbox, searchbox, combobox, listbox, spinbutton or slider; a checkbox, switch or radio button takes true or false`;
  }
  if (CHECKABLE_ROLES.has(element.role)) return undefined;
  if (RADIO_ROLES.has(element.role)) {
    return field.value ? undefined : `${which} cannot be given false: a radio button is unchecked only by checking another of its group`;
  }
  return `${which} cannot take ${field.value}: true or false goes into a checkbox, switch or radio button; a text field or select takes a string`;
}
