import { readFileSync } from 'node:fs';
import { SiteVerificationCatalog, type SiteVerificationDefinition } from '../../shared/authentication.ts';

/**
 * The site verification definitions that ship with the host (ADR-0164: "the initial catalogs are
 * empty"; definitions ship disabled until reviewed fixtures justify each entry). An operator adds
 * reviewed definitions with a catalog file (`HOST_SITE_DEFINITIONS`, see {@link readSiteCatalog}).
 */
export const BUILT_IN_SITE_DEFINITIONS: readonly SiteVerificationDefinition[] = [];

/** A catalog file that cannot be used; the message names the file and what is wrong. */
export class SiteCatalogError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SiteCatalogError';
  }
}

/**
 * The definitions of the catalog file at `file`: JSON `{definitions: [...]}` valid against
 * `SiteVerificationCatalog` (strict; an enabled entry names its `reviewed_fixture`; at most 256
 * entries, unique by id and version).
 * @throws SiteCatalogError when the file cannot be read, is not JSON or does not validate.
 */
export function readSiteCatalog(file: string): SiteVerificationDefinition[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SiteCatalogError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new SiteCatalogError(`${file} is not JSON`);
  }
  const parsed = SiteVerificationCatalog.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((issue) => `${issue.path.join('.') || '(file)'}: ${issue.message}`);
    throw new SiteCatalogError(`${file} is not a valid site catalog: ${issues.join('; ')}`);
  }
  return parsed.data.definitions;
}

/**
 * The definitions in use: only `enabled` entries, looked up by origin (letter case ignored); when
 * several enabled entries name one origin, the highest version wins.
 */
export class SiteCatalog {
  readonly #byOrigin = new Map<string, SiteVerificationDefinition>();

  constructor(definitions: readonly SiteVerificationDefinition[]) {
    for (const definition of definitions) {
      if (!definition.enabled) continue;
      const origin = definition.origin.toLowerCase();
      const current = this.#byOrigin.get(origin);
      if (current === undefined || definition.version > current.version) this.#byOrigin.set(origin, definition);
    }
  }

  /** Origins with an enabled definition. */
  get size(): number {
    return this.#byOrigin.size;
  }

  /** The enabled definition for `origin` (`scheme://host[:port]`), if any. */
  forOrigin(origin: string): SiteVerificationDefinition | undefined {
    return this.#byOrigin.get(origin.toLowerCase());
  }
}
