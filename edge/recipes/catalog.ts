import { and, desc, eq, sql } from 'drizzle-orm';
import { canonicalOrigins } from '../../shared/origin.ts';
import { fieldsOfRecipe, normalizedIntent, RecipeBody, RecipeStep, type RecipeView, withFields } from '../../shared/recipes.ts';
import type { Principal } from '../auth/principal.ts';
import { newId } from '../db/ids.ts';
import { type RecipeRow, recipes } from '../db/schema.ts';
import { iso } from '../db/timestamps.ts';
import { DomainError } from '../domain-error.ts';
import { canonicalHash } from '../policy/canonical-hash.ts';
import type { Ports } from '../ports.ts';

/**
 * The operator's recipe catalog (issue 19, ADR-0164 part 5, DESIGN.md section 9): versioned
 * entries stored with a content hash, like policy profiles. The built-in catalog is empty. Only
 * the operator principal publishes (the route says so); nothing a page shows, and nothing an
 * agent or owner sends, reaches these functions' writes.
 */

/**
 * Publishes the next version of recipe `id` (the first is 1). The new version is in force for
 * every later selection; runs already bound keep the version and hash they recorded.
 * @throws DomainError('already_decided') when another version was published concurrently.
 */
export async function publishRecipe(ports: Ports, principal: Principal, id: string, body: RecipeBody): Promise<RecipeView> {
  const newest = await newestVersion(ports, id);
  const version = (newest?.version ?? 0) + 1;
  const now = ports.clock.now();
  const origin = canonicalOrigins([body.origin])[0] ?? body.origin;
  const stored: RecipeBody = { ...body, origin };
  const row: RecipeRow = {
    rowId: newId('rcp'),
    id,
    version,
    enabled: body.enabled,
    reviewedFixture: body.reviewed_fixture,
    origin,
    phrases: [...new Set(body.phrases.map(normalizedIntent))],
    body: stored,
    hash: await canonicalHash(stored),
    createdBy: principal.id,
    createdAt: now,
  };
  try {
    await ports.db.insert(recipes).values(row);
  } catch {
    throw new DomainError('already_decided', `version ${version} of recipe ${id} was published concurrently; read it and publish again`);
  }
  return recipeView(row, await newestVersions(ports));
}

/** The newest version of recipe `id`. @throws DomainError('not_found') for an id never published. */
export async function readRecipe(ports: Ports, id: string): Promise<RecipeView> {
  const row = await newestVersion(ports, id);
  if (!row) throw new DomainError('not_found', `no recipe ${id}`);
  return recipeView(row, await newestVersions(ports));
}

/** The newest version of every recipe, by id (at most 500). The built-in catalog is empty. */
export async function listRecipes(ports: Ports): Promise<RecipeView[]> {
  const rows = await newestVersions(ports);
  return rows.map((row) => recipeView(row, rows));
}

function newestVersions(ports: Ports): Promise<RecipeRow[]> {
  return ports.db
    .select()
    .from(recipes)
    .where(sql`${recipes.version} = (select max(r.version) from recipes r where r.id = ${recipes.id})`)
    .orderBy(recipes.id)
    .limit(500);
}

/** Whether selection may pick a stored version: enabled and naming a reviewed fixture. */
function inUse(row: Pick<RecipeRow, 'enabled' | 'reviewedFixture'>): boolean {
  return row.enabled && row.reviewedFixture.trim() !== '';
}

/**
 * The other recipes in use that share a normalized phrase and the origin with `row`: while they
 * do, a run asked in that phrase matches several and none of them is selected.
 */
function clashesOf(row: RecipeRow, newest: readonly RecipeRow[]): string[] {
  if (!inUse(row)) return [];
  return newest
    .filter((other) => other.id !== row.id && other.origin === row.origin && inUse(other) && other.phrases.some((phrase) => row.phrases.includes(phrase)))
    .map((other) => other.id);
}

/** A recipe version a run is bound to: the row, and its body parsed again. */
export interface SelectedRecipe {
  readonly row: RecipeRow;
  readonly body: RecipeBody;
}

/**
 * The recipe an owner's new run is bound to (ADR-0164 part 5: "exact normalized owner-intent
 * phrases and an already selected origin; ambiguous matches use the ordinary agent"): among the
 * newest versions in use (enabled and naming a reviewed fixture) whose origin is the run's one
 * selected origin, those with a phrase equal to the normalized intent. Exactly one match, whose
 * fields the message carries, is selected; zero or several, or missing fields: undefined, and the
 * run takes the ordinary agent path unchanged.
 * @param origins the run's origins, canonical; a run with more than one origin has none selected.
 */
export async function selectRecipe(
  ports: Ports,
  intent: string,
  origins: readonly string[],
  fields: Readonly<Record<string, string>> | undefined,
): Promise<SelectedRecipe | undefined> {
  const [origin] = origins;
  if (origins.length !== 1 || origin === undefined) return undefined;
  const wanted = normalizedIntent(intent);
  if (wanted === '') return undefined;
  const candidates = await ports.db
    .select()
    .from(recipes)
    .where(
      and(
        eq(recipes.origin, origin),
        sql`${recipes.version} = (select max(r.version) from recipes r where r.id = ${recipes.id})`,
        eq(recipes.enabled, true),
        sql`trim(${recipes.reviewedFixture}) <> ''`,
        sql`exists (select 1 from json_each(${recipes.phrases}) where json_each.value = ${wanted})`,
      ),
    )
    .limit(2);
  if (candidates.length !== 1) return undefined;
  const row = candidates[0]!;
  const body = RecipeBody.safeParse(row.body);
  if (!body.success) return undefined;
  // A field the owner left blank (or invisible) is a field the owner did not give: nothing would be typed.
  if (fieldsOfRecipe(body.data).some((field) => (fields?.[field] ?? '').replace(/[\p{Cf}\p{Cc}\p{Z}\s]+/gu, '') === '')) return undefined;
  // The steps as the owner's values make them must still be valid steps (a 1,000-character title
  // is no 200-character predicate): otherwise the recipe cannot prove anything for this message.
  if (
    !body.data.steps.every(
      (step) =>
        RecipeStep.safeParse({ ...step, expect: withFields(step.expect, fields ?? {}), postcondition: withFields(step.postcondition, fields ?? {}) }).success,
    )
  ) {
    return undefined;
  }
  return { row, body: body.data };
}

/**
 * A bound run's recipe version, as recorded (id and version), parsed again.
 * @throws DomainError('not_found') when that version is not in the catalog (it never is removed).
 */
export async function boundRecipe(ports: Ports, id: string, version: number): Promise<SelectedRecipe> {
  const row = await ports.db
    .select()
    .from(recipes)
    .where(and(eq(recipes.id, id), eq(recipes.version, version)))
    .get();
  const body = row ? RecipeBody.safeParse(row.body) : undefined;
  if (!row || !body?.success) throw new DomainError('not_found', `recipe ${id} version ${version} is not in the catalog`);
  return { row, body: body.data };
}

function newestVersion(ports: Ports, id: string): Promise<RecipeRow | undefined> {
  return ports.db.select().from(recipes).where(eq(recipes.id, id)).orderBy(desc(recipes.version)).limit(1).get();
}

/** The API view of a stored recipe version; `newest` are the catalog's newest versions, for its clashes. */
export function recipeView(row: RecipeRow, newest: readonly RecipeRow[]): RecipeView {
  const body = RecipeBody.parse(row.body);
  return {
    ...body,
    id: row.id,
    version: row.version,
    hash: row.hash,
    fields: fieldsOfRecipe(body),
    in_use: inUse(row),
    clashes_with: clashesOf(row, newest),
    created_by: row.createdBy,
    created_at: iso(row.createdAt),
  };
}
