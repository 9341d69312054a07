import { z } from 'zod';
import { Condition, ConditionV1_4 } from './predicate.ts';

/**
 * The arguments of the browser tools, as strict zod schemas (DESIGN.md section 3): unknown
 * fields, coercible strings ("100") and non-integers are rejected before anything runs. The
 * wire protocol (protocol.ts) sends the same action schema to the host; the tool registry
 * (tools.ts) binds these schemas to tool names and versions.
 */

/** Longest URL a navigation accepts, in characters. */
export const MAX_URL_LENGTH = 2048;
/** Longest text a `type` action accepts, in characters. */
export const MAX_TYPE_TEXT_LENGTH = 10_000;

/**
 * An element reference from an aria snapshot, e.g. `e12` or `f1e3` (frame 1, element 3).
 * It is meaningful only with the revision of the observation that produced it.
 */
export const ElementRef = z.string().regex(/^[a-z0-9]{1,32}$/, 'an aria snapshot ref such as e12 or f1e3');

/** The page revision an action targets; acting on any other than the latest fails `stale_revision`. */
export const Revision = z.int().min(0).max(Number.MAX_SAFE_INTEGER);

/** `browser.navigate` 1.1.0 to 1.4.0 arguments: a URL to load. */
export const NavigateArgumentsV1_4 = z.strictObject({
  url: z.string().min(1).max(MAX_URL_LENGTH),
});

/** A move through the tab's session history (1.5.0): `back`, `forward`, or `reload` the current entry. */
export const HistoryMove = z.enum(['back', 'forward', 'reload']);
export type HistoryMove = z.infer<typeof HistoryMove>;

/**
 * `browser.navigate` 1.5.0 arguments: a URL to load, or a history move. The history entry a move
 * lands on is decided by policy like a navigation to its URL (outside the run's origins it is
 * refused), which the host reports before anything moves.
 */
export const NavigateArguments = z.union([NavigateArgumentsV1_4, z.strictObject({ history: HistoryMove })]);
export type NavigateArguments = z.infer<typeof NavigateArguments>;

/** An opaque cursor from `window.continuation` of an earlier observation of the same revision. */
export const ContinuationCursor = z.string().min(1).max(512);

/** `browser.observe` 1.1.0 arguments. */
export const ObserveArgumentsV1_1 = z.strictObject({
  continuation: ContinuationCursor.optional(),
});

/** `browser.observe` 1.2.0 to 1.4.0 arguments: `continuation` or `wait_for`, never both. */
export const ObserveArguments = z
  .strictObject({
    continuation: ContinuationCursor.optional(),
    wait_for: ConditionV1_4.optional(),
  })
  .refine((args) => args.continuation === undefined || args.wait_for === undefined, {
    message: 'continuation and wait_for are mutually exclusive',
  });
export type ObserveArguments = z.infer<typeof ObserveArguments>;

/**
 * `browser.observe` 1.5.0 arguments: 1.2.0's plus `screenshot`, a viewport JPEG of the same
 * revision (page content: tainted like the text), for vision models and for points. A screenshot
 * comes with a fresh observation only: `screenshot: true` with a `continuation` is refused here,
 * before anything is sent (the host refuses it too).
 */
export const ObserveArgumentsV1_5 = z
  .strictObject({
    continuation: ContinuationCursor.optional(),
    wait_for: Condition.optional(),
    screenshot: z.boolean().optional(),
  })
  .refine((args) => args.continuation === undefined || args.wait_for === undefined, {
    message: 'continuation and wait_for are mutually exclusive',
  })
  .refine((args) => args.continuation === undefined || args.screenshot !== true, {
    message: 'a screenshot comes with a fresh observation only: screenshot and continuation are mutually exclusive',
    path: ['screenshot'],
  });
export type ObserveArgumentsV1_5 = z.infer<typeof ObserveArgumentsV1_5>;

const target = { revision: Revision, reference: ElementRef };

/** Longest value one `fill_form` field carries, in characters (as a `type` text). */
export const MAX_FIELD_VALUE_LENGTH = MAX_TYPE_TEXT_LENGTH;
/** Most fields one `fill_form` call fills (issue 33). */
export const MAX_FORM_FIELDS = 32;

/** A key name such as `Enter` or `Control+A`. */
export const KeyName = z.string().regex(/^[A-Za-z0-9+]{1,64}$/, 'a key name such as Enter or Control+A');

/**
 * An attached file of the run (`POST /v1/runs/{id}/files`, issue 33), by the id the edge gave it:
 * an upload names one, never a path on the host.
 */
export const RunFileId = z.string().regex(/^file_[A-Za-z0-9_-]{8,64}$/, 'an attached file id such as file_abc123...');

/**
 * One field of a `fill_form` (1.5.0): the element reference and what to put there. A string is
 * typed into a text field or combobox, or selected in a select (by value or label); a boolean
 * checks (`true`) or unchecks (`false`) a checkbox, or checks a radio button (`true` only).
 */
export const FormField = z.strictObject({
  reference: ElementRef,
  value: z.union([z.string().max(MAX_FIELD_VALUE_LENGTH), z.boolean()]),
});
export type FormField = z.infer<typeof FormField>;

/** The fields of each action kind, shared by the wire action and the tool arguments. */
const ACTION_SHAPES = {
  click: { action: z.literal('click'), ...target },
  type: { action: z.literal('type'), ...target, text: z.string().max(MAX_TYPE_TEXT_LENGTH), submit: z.boolean().optional() },
  press: { action: z.literal('press'), ...target, key: KeyName },
  select: { action: z.literal('select'), ...target, value: z.string().max(1000) },
  check: { action: z.literal('check'), ...target },
  uncheck: { action: z.literal('uncheck'), ...target },
  /** `delta` in CSS pixels, negative is up; the schema bound only rejects absurd input. */
  scroll: { action: z.literal('scroll'), ...target, delta: z.int().min(-100_000).max(100_000) },
  /** 1.5.0: move the pointer over the element (hover menus, tooltips); no button is pressed. */
  hover: { action: z.literal('hover'), ...target },
  /** 1.5.0: press on the element, move to `to_reference` and release there (drag and drop). */
  drag: { action: z.literal('drag'), ...target, to_reference: ElementRef },
  /**
   * 1.5.0: fill up to 32 fields in one call (one decision, one approval listing every field),
   * then optionally click `submit_reference` or press `submit_key` on the last field; never both.
   * `reference` is the first field's (what grants, denies and the owner's picture are about).
   */
  fill_form: {
    action: z.literal('fill_form'),
    revision: Revision,
    fields: z.array(FormField).min(1).max(MAX_FORM_FIELDS),
    submit_reference: ElementRef.optional(),
    submit_key: KeyName.optional(),
  },
  /** 1.5.0: set a file input's file to one the owner attached to the run (by id, never a path). */
  upload: { action: z.literal('upload'), ...target, file_id: RunFileId },
} as const;

/** The kinds of `browser.act` action, the one list every schema (grants, policy denies) uses. */
export const ActionKind = z.enum(Object.keys(ACTION_SHAPES) as [keyof typeof ACTION_SHAPES, ...(keyof typeof ACTION_SHAPES)[]]);
export type ActionKind = z.infer<typeof ActionKind>;

const fillFormSubmit = (action: { submit_reference?: string | undefined; submit_key?: string | undefined }) =>
  action.submit_reference === undefined || action.submit_key === undefined;
const FILL_FORM_SUBMIT_MESSAGE = { message: 'submit_reference and submit_key are mutually exclusive', path: ['submit_key'] };

/**
 * One browser action on referenced elements, exactly as the host receives it: the edge never
 * forwards a postcondition (ADR-0159: only the original single action goes to the provider), and
 * a point an agent named is resolved to a reference by the edge before anything is decided.
 */
export const BrowserAction = z.discriminatedUnion('action', [
  z.strictObject(ACTION_SHAPES.click),
  z.strictObject(ACTION_SHAPES.type),
  z.strictObject(ACTION_SHAPES.press),
  z.strictObject(ACTION_SHAPES.select),
  z.strictObject(ACTION_SHAPES.check),
  z.strictObject(ACTION_SHAPES.uncheck),
  z.strictObject(ACTION_SHAPES.scroll),
  z.strictObject(ACTION_SHAPES.hover),
  z.strictObject(ACTION_SHAPES.drag),
  z.strictObject({ ...ACTION_SHAPES.fill_form, reference: ElementRef }).refine(fillFormSubmit, FILL_FORM_SUBMIT_MESSAGE),
  z.strictObject(ACTION_SHAPES.upload),
]);
export type BrowserAction = z.infer<typeof BrowserAction>;

/** `browser.act` 1.1.0 arguments: the action alone (the 1.4.0 kinds). */
export const ActArgumentsV1_1 = z.discriminatedUnion('action', [
  z.strictObject(ACTION_SHAPES.click),
  z.strictObject(ACTION_SHAPES.type),
  z.strictObject(ACTION_SHAPES.press),
  z.strictObject(ACTION_SHAPES.select),
  z.strictObject(ACTION_SHAPES.check),
  z.strictObject(ACTION_SHAPES.uncheck),
  z.strictObject(ACTION_SHAPES.scroll),
]);

const postcondition = { postcondition: Condition.optional() };
const postconditionV1_4 = { postcondition: ConditionV1_4.optional() };

/**
 * `browser.act` 1.2.0 to 1.4.0 arguments: the action plus an optional postcondition the edge
 * evaluates, in the predicate language of those versions (control states `disabled`, `checked`).
 */
export const ActArgumentsV1_4 = z.discriminatedUnion('action', [
  z.strictObject({ ...ACTION_SHAPES.click, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.type, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.press, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.select, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.check, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.uncheck, ...postconditionV1_4 }),
  z.strictObject({ ...ACTION_SHAPES.scroll, ...postconditionV1_4 }),
]);

/** Largest coordinate a point may name, in CSS px (the schema bound only rejects absurd input). */
export const MAX_POINT_COORDINATE = 100_000;

/**
 * A point in the viewport screenshot of the act's revision (`browser.observe` with `screenshot`,
 * 1.5.0), in CSS px from its top-left corner (the screenshot's pixels are CSS px). The host
 * hit-tests it to the element there; from then on the act is exactly an act on that reference.
 */
export const ViewportPoint = z.strictObject({
  x: z.number().min(0).max(MAX_POINT_COORDINATE),
  y: z.number().min(0).max(MAX_POINT_COORDINATE),
});
export type ViewportPoint = z.infer<typeof ViewportPoint>;

/** 1.5.0 target of a single-element act: a reference or a point in the revision's screenshot, exactly one. */
const pointed = { revision: Revision, reference: ElementRef.optional(), point: ViewportPoint.optional() };
const onePlace = (args: { reference?: string | undefined; point?: ViewportPoint | undefined }) => (args.reference === undefined) !== (args.point === undefined);
const ONE_PLACE_MESSAGE = { message: 'exactly one of reference and point', path: ['reference'] };
function pointedShape<S extends { action: z.ZodLiteral<string>; reference: typeof ElementRef; revision: typeof Revision }>(shape: S) {
  const { reference: _reference, revision: _revision, ...rest } = shape;
  return { ...(rest as Omit<S, 'reference' | 'revision'>), ...pointed, ...postcondition };
}

/**
 * `browser.act` 1.5.0 arguments: the 1.4.0 actions plus hover, drag, fill_form and upload (issue
 * 33), and a `point` in place of `reference` for every single-element action (and `to_point` in
 * place of `to_reference` for a drag's destination).
 */
export const ActArguments = z.discriminatedUnion('action', [
  z.strictObject(pointedShape(ACTION_SHAPES.click)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.type)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.press)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.select)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.check)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.uncheck)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.scroll)).refine(onePlace, ONE_PLACE_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.hover)).refine(onePlace, ONE_PLACE_MESSAGE),
  z
    .strictObject({ ...pointedShape(ACTION_SHAPES.drag), to_reference: ElementRef.optional(), to_point: ViewportPoint.optional() })
    .refine(onePlace, ONE_PLACE_MESSAGE)
    .refine((args) => (args.to_reference === undefined) !== (args.to_point === undefined), {
      message: 'exactly one of to_reference and to_point',
      path: ['to_reference'],
    }),
  z.strictObject({ ...ACTION_SHAPES.fill_form, ...postcondition }).refine(fillFormSubmit, FILL_FORM_SUBMIT_MESSAGE),
  z.strictObject(pointedShape(ACTION_SHAPES.upload)).refine(onePlace, ONE_PLACE_MESSAGE),
]);
export type ActArguments = z.infer<typeof ActArguments>;

/**
 * The references an act touches once its points are resolved: `reference` (the first field's for
 * a fill_form) and, for a drag, `to_reference`. `resolved` gives the references the edge found for
 * the act's points (edge/pipeline/points.ts); an unresolved point has none.
 */
export interface ResolvedPoints {
  readonly reference?: string;
  readonly to_reference?: string;
}

/**
 * The action of `browser.act` arguments without the postcondition, its points replaced by the
 * references they were resolved to: what the host is sent.
 * @throws Error when a point has no resolved reference (a bug: points are resolved before any decision).
 */
export function wireAction(args: ActArguments, resolved: ResolvedPoints = {}): BrowserAction {
  const { postcondition: _omitted, ...action } = args as ActArguments & { point?: unknown; to_point?: unknown };
  if (action.action === 'fill_form') {
    const first = action.fields[0]?.reference ?? '';
    return { ...action, reference: first } as BrowserAction;
  }
  const { point, to_point, ...rest } = action as typeof action & { point?: ViewportPoint; to_point?: ViewportPoint; reference?: string; to_reference?: string };
  const reference = rest.reference ?? resolved.reference;
  if (reference === undefined) throw new Error(`act ${action.action}: point ${JSON.stringify(point)} was not resolved to a reference`);
  if (action.action === 'drag') {
    const toReference = rest.to_reference ?? resolved.to_reference;
    if (toReference === undefined) throw new Error(`drag: to_point ${JSON.stringify(to_point)} was not resolved to a reference`);
    return { ...rest, reference, to_reference: toReference } as BrowserAction;
  }
  return { ...rest, reference } as BrowserAction;
}

/** Whether an act names a point (its own or a drag's destination) that must be hit-tested first. */
export function namesPoint(args: ActArguments): boolean {
  return 'point' in args && args.point !== undefined ? true : 'to_point' in args && args.to_point !== undefined;
}

/**
 * Every kind of input an act sends, for operator denies (a deny of `type` must also stop a
 * fill_form that types): the act's own kind, and for a fill_form `type` and `select` for a text
 * value (the edge cannot tell a text field from a select by the arguments alone), `check` for
 * `true`, `uncheck` for `false`, `click` for a submit button and `press` for a submit key; for a
 * drag, `click` too (it presses the pointer's button on the source).
 */
export function sentActionKinds(args: { action: ActionKind } & Record<string, unknown>): ActionKind[] {
  const kinds = new Set<ActionKind>([args.action]);
  if (args.action === 'drag') kinds.add('click');
  if (args.action === 'fill_form') {
    for (const field of (args.fields as readonly FormField[] | undefined) ?? []) {
      if (typeof field.value === 'string') {
        kinds.add('type');
        kinds.add('select');
      } else kinds.add(field.value ? 'check' : 'uncheck');
    }
    if (args.submit_reference !== undefined) kinds.add('click');
    if (args.submit_key !== undefined) kinds.add('press');
  }
  return [...kinds];
}
