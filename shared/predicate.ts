import { z } from 'zod';

/**
 * The one declarative predicate language of postconditions and `wait_for` (DESIGN.md section 7,
 * ADR-0159 and ADR-0164 part 1). Strict: no selector, regular expression, script, origin or
 * profile parameter exists, and unknown fields are rejected. A match is evidence of something
 * visible in the observed window, never proof of a write, an identity or completion.
 */

/** Roles of WAI-ARIA 1.2 (plus the implicit roles Playwright's snapshot reports). */
export const AriaRole = z.enum([
  'alert',
  'alertdialog',
  'application',
  'article',
  'banner',
  'blockquote',
  'button',
  'caption',
  'cell',
  'checkbox',
  'code',
  'columnheader',
  'combobox',
  'complementary',
  'contentinfo',
  'definition',
  'deletion',
  'dialog',
  'directory',
  'document',
  'emphasis',
  'feed',
  'figure',
  'form',
  'generic',
  'grid',
  'gridcell',
  'group',
  'heading',
  'img',
  'insertion',
  'link',
  'list',
  'listbox',
  'listitem',
  'log',
  'main',
  'marquee',
  'math',
  'meter',
  'menu',
  'menubar',
  'menuitem',
  'menuitemcheckbox',
  'menuitemradio',
  'navigation',
  'none',
  'note',
  'option',
  'paragraph',
  'presentation',
  'progressbar',
  'radio',
  'radiogroup',
  'region',
  'row',
  'rowgroup',
  'rowheader',
  'scrollbar',
  'search',
  'searchbox',
  'separator',
  'slider',
  'spinbutton',
  'status',
  'strong',
  'subscript',
  'superscript',
  'switch',
  'tab',
  'table',
  'tablist',
  'tabpanel',
  'term',
  'textbox',
  'time',
  'timer',
  'toolbar',
  'tooltip',
  'tree',
  'treegrid',
  'treeitem',
]);
export type AriaRole = z.infer<typeof AriaRole>;

/** Landmark and semantic region roles a `region` predicate may name. */
export const RegionRole = z.enum([
  'banner',
  'complementary',
  'contentinfo',
  'form',
  'main',
  'navigation',
  'region',
  'search',
  'dialog',
  'alertdialog',
  'alert',
  'status',
  'log',
  'tabpanel',
  'article',
  'group',
]);

/** Collection roles a `row` predicate may name. */
export const CollectionRole = z.enum(['table', 'grid', 'treegrid', 'list', 'listbox']);

/** Longest accessible name or text a predicate may carry, in characters. */
export const MAX_PREDICATE_TEXT = 200;
const ExactName = z
  .string()
  .min(1)
  .max(MAX_PREDICATE_TEXT)
  .refine((s) => s.trim() !== '', 'must not be blank');

/**
 * A control of an exact role and name, optionally in exact states. 1.5.0 (issue 33) adds
 * `selected` (a tab, an option), `expanded` (an accordion header, a disclosure, a combobox),
 * `pressed` (a toggle button) and `value` (the exact value of a text field, select or combobox).
 * A state the element does not expose is `not_observed`, never a guess.
 */
export const ControlPredicate = z.strictObject({
  kind: z.literal('control'),
  role: AriaRole,
  name: ExactName,
  disabled: z.boolean().optional(),
  checked: z.boolean().optional(),
  selected: z.boolean().optional(),
  expanded: z.boolean().optional(),
  pressed: z.boolean().optional(),
  value: z.string().max(MAX_PREDICATE_TEXT).optional(),
});

export const TextPredicate = z.strictObject({
  kind: z.literal('text'),
  /** Exact substring of the rendered text (whitespace collapsed). */
  text: ExactName,
});

export const RegionPredicate = z.strictObject({
  kind: z.literal('region'),
  role: RegionRole,
  name: ExactName,
});

export const LocationPredicate = z
  .strictObject({
    kind: z.literal('location'),
    /** Exact URL of the current document, or an exact path (`/a/b`, with `?query` or `#hash` if given). */
    url: z.string().min(1).max(2048).optional(),
    path: z
      .string()
      .regex(/^\/[^\s]{0,2047}$/, 'a path starting with /')
      .optional(),
  })
  .refine((p) => (p.url === undefined) !== (p.path === undefined), 'exactly one of url and path');

export const RowPredicate = z.strictObject({
  kind: z.literal('row'),
  collection: z.strictObject({ role: CollectionRole, name: ExactName.optional() }),
  /**
   * Named cell values, exact: column header name to cell text for tables and grids; for lists
   * and listboxes the only key is `text`, the item's whole rendered text.
   */
  cells: z.record(ExactName, z.string().max(MAX_PREDICATE_TEXT)).refine((cells) => {
    const count = Object.keys(cells).length;
    return count >= 1 && count <= 16;
  }, 'between 1 and 16 cells'),
});

export const Predicate = z.discriminatedUnion('kind', [ControlPredicate, TextPredicate, RegionPredicate, LocationPredicate, RowPredicate]);
export type Predicate = z.infer<typeof Predicate>;

/** The control predicate of tool versions 1.2.0 to 1.4.0: `disabled` and `checked` only. */
export const ControlPredicateV1_4 = ControlPredicate.omit({ selected: true, expanded: true, pressed: true, value: true });

/** The predicate language of tool versions 1.2.0 to 1.4.0: a call pinned to them keeps its shape. */
export const PredicateV1_4 = z.discriminatedUnion('kind', [ControlPredicateV1_4, TextPredicate, RegionPredicate, LocationPredicate, RowPredicate]);

/** Longest predicate budget, in ms. */
export const MAX_PREDICATE_TIMEOUT_MS = 5_000;
/** Default predicate budget, in ms. */
export const DEFAULT_PREDICATE_TIMEOUT_MS = 2_000;

/**
 * A postcondition or `wait_for`: what success looks like, optionally what failure looks like, and
 * how long to keep reading (0-5,000 ms, default 2,000).
 */
export const Condition = z.strictObject({
  success: Predicate,
  failure: Predicate.optional(),
  timeout_ms: z.int().min(0).max(MAX_PREDICATE_TIMEOUT_MS).optional(),
});
export type Condition = z.infer<typeof Condition>;

/** A postcondition or `wait_for` of tool versions 1.2.0 to 1.4.0 (control states `disabled` and `checked` only). */
export const ConditionV1_4 = z.strictObject({
  success: PredicateV1_4,
  failure: PredicateV1_4.optional(),
  timeout_ms: z.int().min(0).max(MAX_PREDICATE_TIMEOUT_MS).optional(),
});

export const ConditionStatus = z.enum(['satisfied', 'ambiguous', 'failure_observed', 'not_observed']);
export type ConditionStatus = z.infer<typeof ConditionStatus>;
