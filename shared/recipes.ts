import { z } from 'zod';
import { Origin } from './origin.ts';
import { AriaRole, Condition, MAX_PREDICATE_TEXT, Predicate } from './predicate.ts';
import { MAX_TYPE_TEXT_LENGTH } from './tool-arguments.ts';

/**
 * Reviewed recipes (ADR-0164 part 5, DESIGN.md section 9): a routine task an owner asks for
 * often, written down once by the operator as expected states and targets, never as actions to
 * replay. The contracts of the operator's catalog API, of a recipe-bound run's timeline, and the
 * rule that selects a recipe for an owner's message. A recipe carries no script, selector,
 * element reference, credential, approval or permission exemption: every field is one of the
 * strict shapes below, and each step's call still goes through the whole pipeline (policy,
 * approval or grant, watermark, settle, postcondition).
 */

/** Most steps a recipe has, and most step executions one recipe run begins (ADR-0164 part 5). */
export const MAX_RECIPE_STEPS = 16;
/** Most tool calls one recipe run makes: observations, navigations and acts together. */
export const MAX_RECIPE_CALLS = 64;
/** Longest a recipe run goes on, in ms (15 minutes), inside the run's own deadline. */
export const MAX_RECIPE_DURATION_MS = 15 * 60_000;
/** Most owner-intent phrases one recipe answers to. */
export const MAX_RECIPE_PHRASES = 16;
/** Most named fields an owner's message carries. */
export const MAX_MESSAGE_FIELDS = 16;
/** Longest value of one named field, in characters. */
export const MAX_FIELD_VALUE_LENGTH = 1_000;

/** A recipe's stable name: lower-case letters, digits and `-`, at most 64. */
export const RecipeId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and -, at most 64, e.g. file-weekly-report');
export type RecipeId = z.infer<typeof RecipeId>;

/** The name of a field of the owner's trusted message (`title`, `due_date`): letters, digits and `_`. */
export const FieldName = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a field name such as title or due_date');

/**
 * The named fields of an owner's message (`POST /v1/runs` `fields`): trusted values a recipe may
 * type, never read off a page. At most 16, each at most 1,000 characters.
 */
export const MessageFields = z
  .record(FieldName, z.string().max(MAX_FIELD_VALUE_LENGTH))
  .refine((fields) => Object.keys(fields).length <= MAX_MESSAGE_FIELDS, `at most ${MAX_MESSAGE_FIELDS} fields`);
export type MessageFields = z.infer<typeof MessageFields>;

/**
 * A value a step types or selects: written in the recipe (`{text}`) or taken from a named field of
 * the owner's trusted message (`{field}`). Never from the page.
 */
export const RecipeValue = z.union([z.strictObject({ text: z.string().max(MAX_TYPE_TEXT_LENGTH) }), z.strictObject({ field: FieldName })]);
export type RecipeValue = z.infer<typeof RecipeValue>;

const TargetName = z
  .string()
  .min(1)
  .max(MAX_PREDICATE_TEXT)
  .refine((name) => name.trim() !== '', 'must not be blank');

/**
 * Words of a credential field: a recipe never types into one (credentials are the person's, in
 * the sign-in ceremony, never the recipe's).
 */
const CREDENTIAL_FIELD =
  /pass ?word|passwd|pwd|passcode|passphrase|passwort|passwörd|kennwort|geheimzahl|has[lł]o|mot de passe|contrase[nñ]a|senha|wachtwoord|пароль|パスワード|密码|密碼|비밀번호|one ?time|otp|2fa|two ?factor|verification code|security code|secret|token|cvv|cvc|card number|(^| )pin( |$)/;

/**
 * Whether an accessible name reads as a credential field (password, one-time code, PIN, card
 * number), compared as selection compares intents: NFKC, lower case, punctuation and symbols as
 * spaces (so `Ｐａｓｓｗｏｒｄ`, `Your_password` and `password123` all do).
 */
export function namesCredentialField(name: string): boolean {
  return CREDENTIAL_FIELD.test(normalizedIntent(name));
}

/** What a step acts on: a role and an exact accessible name, found anew on every fresh observation (never a ref). */
export const RecipeTarget = z.strictObject({ role: AriaRole, name: TargetName });
export type RecipeTarget = z.infer<typeof RecipeTarget>;

/** The action of a step: the kinds of `browser.act` a recipe may use, with recipe or owner values only. */
export const RecipeAction = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('click') }),
  z.strictObject({ kind: z.literal('type'), value: RecipeValue, submit: z.boolean().optional() }),
  z.strictObject({ kind: z.literal('select'), value: RecipeValue }),
  z.strictObject({ kind: z.literal('check') }),
  z.strictObject({ kind: z.literal('press'), key: z.string().regex(/^[A-Za-z0-9+]{1,64}$/, 'a key name such as Enter or Control+A') }),
  z.strictObject({ kind: z.literal('scroll'), delta: z.int().min(-2_000).max(2_000) }),
]);
export type RecipeAction = z.infer<typeof RecipeAction>;

/**
 * One step: the state expected before it (a predicate of the postcondition language, read on a
 * fresh observation), the target, the action, and the postcondition that proves it. The step is
 * recorded done only when its postcondition is satisfied. Texts of the expected state and the
 * postcondition may name a field of the owner's message as `{{field}}`.
 */
export const RecipeStep = z
  .strictObject({
    /** What the step does, in words for the owner's timeline ("Open the new report form"). */
    title: z.string().min(1).max(200),
    expect: Predicate,
    target: RecipeTarget,
    action: RecipeAction,
    postcondition: Condition,
  })
  .refine((step) => !(step.action.kind === 'type' || step.action.kind === 'select') || !namesCredentialField(step.target.name), {
    message: 'a recipe never types into a credential field (password, one-time code, PIN, card number)',
    path: ['target', 'name'],
  });
export type RecipeStep = z.infer<typeof RecipeStep>;

/** An intent phrase as written: 1-200 characters with at least one letter or digit. */
const Phrase = z
  .string()
  .min(1)
  .max(200)
  .refine((phrase) => /[\p{L}\p{N}]/u.test(normalizedIntent(phrase)), 'must contain a letter or digit');

/**
 * `POST /v1/recipes/{id}`: the next version of a recipe, whole. `enabled` and `reviewed_fixture`
 * (the fixture whose test justifies the entry) are both needed for it to be used.
 */
export const RecipeBody = z
  .strictObject({
    enabled: z.boolean(),
    /** The reviewed fixture that justifies the entry, e.g. `scripts/account-site.ts`; empty means not reviewed. */
    reviewed_fixture: z.string().max(200),
    /** The one origin the recipe works on; a run is bound only when this is the run's selected origin. */
    origin: Origin,
    /** Exact owner-intent phrases, matched after case, whitespace and punctuation are folded. */
    phrases: z.array(Phrase).min(1).max(MAX_RECIPE_PHRASES),
    /** The page the recipe begins on (and returns to when the browser is on no page of the origin). */
    start_path: z.string().regex(/^\/[^\s]{0,2047}$/, 'a path starting with /'),
    steps: z.array(RecipeStep).min(1).max(MAX_RECIPE_STEPS),
    description: z.string().max(2_000).optional(),
  })
  .meta({
    examples: [
      {
        enabled: true,
        reviewed_fixture: 'scripts/account-site.ts',
        origin: 'http://127.0.0.1:8090',
        phrases: ['File the weekly report'],
        start_path: '/reports',
        steps: [
          {
            title: 'Open the new report form',
            expect: { kind: 'control', role: 'link', name: 'New report' },
            target: { role: 'link', name: 'New report' },
            action: { kind: 'click' },
            postcondition: { success: { kind: 'control', role: 'textbox', name: 'Title' } },
          },
          {
            title: 'Type the title and file it',
            expect: { kind: 'control', role: 'textbox', name: 'Title' },
            target: { role: 'textbox', name: 'Title' },
            action: { kind: 'type', value: { text: 'Weekly report' }, submit: true },
            postcondition: { success: { kind: 'row', collection: { role: 'list', name: 'Filed reports' }, cells: { text: 'Weekly report' } } },
          },
        ],
      },
    ],
  });
export type RecipeBody = z.infer<typeof RecipeBody>;

/**
 * A placeholder for a field of the owner's message inside a step's expected state or
 * postcondition text: `{{title}}` reads as the value the owner gave, so a step can prove that
 * exactly what it typed is now listed ("Week 49", not any earlier report).
 */
const FIELD_PLACEHOLDER = /\{\{([a-z][a-z0-9_]{0,31})\}\}/g;

/** The strings of a JSON value, depth first. */
function* stringsOf(value: unknown): Generator<string> {
  if (typeof value === 'string') yield value;
  else if (Array.isArray(value)) for (const item of value) yield* stringsOf(item);
  else if (value !== null && typeof value === 'object') for (const [key, item] of Object.entries(value)) yield* [key, ...stringsOf(item)];
}

/**
 * The fields of the owner's message a recipe needs, in order of first use: those its steps type
 * or select, and those its expected states and postconditions name as `{{field}}`.
 */
export function fieldsOfRecipe(body: Pick<RecipeBody, 'steps'>): string[] {
  const fields: string[] = [];
  const add = (field: string) => {
    if (!fields.includes(field)) fields.push(field);
  };
  for (const step of body.steps) {
    for (const text of stringsOf([step.expect, step.postcondition])) for (const match of text.matchAll(FIELD_PLACEHOLDER)) add(match[1]!);
    const value = step.action.kind === 'type' || step.action.kind === 'select' ? step.action.value : undefined;
    if (value !== undefined && 'field' in value) add(value.field);
  }
  return fields;
}

/**
 * `value` (a predicate or condition of a step) with every `{{field}}` replaced by the owner's
 * value of that field (an absent field reads as empty). Trusted values only: the owner's message,
 * never the page.
 */
export function withFields<T>(value: T, fields: Readonly<Record<string, string>>): T {
  const fill = (text: string) => text.replace(FIELD_PLACEHOLDER, (_whole, name: string) => fields[name] ?? '');
  const visit = (item: unknown): unknown => {
    if (typeof item === 'string') return fill(item);
    if (Array.isArray(item)) return item.map(visit);
    if (item !== null && typeof item === 'object') return Object.fromEntries(Object.entries(item).map(([key, inner]) => [fill(key), visit(inner)]));
    return item;
  };
  return visit(value) as T;
}

/** One version of a recipe as the catalog keeps it, with the SHA-256 of its canonical JSON. */
export const RecipeView = RecipeBody.safeExtend({
  id: RecipeId,
  version: z.int().min(1),
  /** SHA-256 hex of the canonical JSON of the body: a bound run records it. */
  hash: z.string(),
  /** Fields of the owner's message the recipe needs (a message without them takes the ordinary path). */
  fields: z.array(z.string()),
  /** Whether selection may pick it: enabled and naming a reviewed fixture. */
  in_use: z.boolean(),
  /**
   * Other recipes in use on the same origin that share one of its phrases: while any does, a run
   * asked in that phrase matches several recipes and takes the ordinary agent path.
   */
  clashes_with: z.array(z.string()),
  created_by: z.string(),
  created_at: z.string(),
});
export type RecipeView = z.infer<typeof RecipeView>;

export const RecipeList = z.strictObject({ recipes: z.array(RecipeView) });
export type RecipeList = z.infer<typeof RecipeList>;

export const RecipeParam = z.strictObject({ id: RecipeId.meta({ examples: ['file-weekly-report'] }) });

/** The recipe a run is bound to, as recorded on the run when it was created. */
export const RecipeBinding = z.strictObject({ id: z.string(), version: z.int().min(1), hash: z.string() });
export type RecipeBinding = z.infer<typeof RecipeBinding>;

/** What the runner recorded about a step: a fresh read, a call, the evidence, or the end. */
export const RecipeEventKind = z.enum([
  'bound',
  'observed',
  'expected_state_visible',
  'already_done',
  'target_selected',
  'target_ambiguous',
  'call',
  'waiting_for_approval',
  'waiting_for_sign_in',
  'resumed',
  'step_done',
  'returned_to_observation',
  'stopped',
  'ended',
]);
export type RecipeEventKind = z.infer<typeof RecipeEventKind>;

/** One entry of a recipe run's timeline. `step` is 0-based; null for the run as a whole. */
export const RecipeEventView = z.strictObject({
  at: z.string(),
  step: z.int().min(0).nullable(),
  kind: RecipeEventKind,
  summary: z.string(),
  /** The call this entry is about, when there is one. */
  tool_call_id: z.string().nullable(),
  /** The evidence, as read: the predicate readings, candidates, condition status, page. */
  evidence: z.record(z.string(), z.unknown()),
});
export type RecipeEventView = z.infer<typeof RecipeEventView>;

/** `GET /v1/runs/{id}/recipe`: the recipe of a bound run, its persisted progress and every step's evidence and calls. */
export const RecipeRunView = z.strictObject({
  run_id: z.string(),
  recipe: RecipeBinding,
  /** The next step to do (0-based): every step before it was proven by its postcondition or seen done. */
  next_step: z.int().min(0),
  /** Step executions begun, of {@link MAX_RECIPE_STEPS}. */
  steps_begun: z.int().min(0),
  /** Calls made, of {@link MAX_RECIPE_CALLS}. */
  calls: z.int().min(0),
  /** When the recipe run must end (ISO 8601): 15 minutes after it began, or the run's deadline if sooner. */
  ends_by: z.string(),
  /** Null while it goes on; how it ended otherwise. */
  outcome: z.enum(['completed', 'partial', 'uncertain', 'failed', 'cancelled', 'deadline_exceeded']).nullable(),
  steps: z.array(
    z.strictObject({
      index: z.int().min(0),
      title: z.string(),
      state: z.enum(['pending', 'done', 'stopped']),
      tool_call_ids: z.array(z.string()),
      events: z.array(RecipeEventView),
    }),
  ),
  /** Entries about the run as a whole (start, resumption, the end and its report). */
  events: z.array(RecipeEventView),
});
export type RecipeRunView = z.infer<typeof RecipeRunView>;

/**
 * The owner's intent as selection compares it (ADR-0164 part 5: "exact normalized owner-intent
 * phrases"): Unicode NFKC, lower case, invisible format and control characters dropped (zero-width
 * space, bidi marks, soft hyphen), every run of punctuation, symbols and whitespace folded to one
 * space, trimmed. "File the weekly report." and "file  the WEEKLY report" are the same intent;
 * "file the monthly report" is not.
 */
export function normalizedIntent(text: string): string {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      // Invisible format and control characters (zero-width space, bidi marks, soft hyphen, NUL) are no part of a word.
      .replace(/[\p{Cf}\p{Cc}]+/gu, (run) => (/[\t\n\v\f\r]/.test(run) ? ' ' : ''))
      .replace(/[\p{P}\p{S}\p{Z}\s]+/gu, ' ')
      .trim()
  );
}
