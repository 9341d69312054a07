import { readFileSync } from 'node:fs';
import { SiteVerificationCatalog, type SiteVerificationDefinition } from '../../shared/authentication.ts';
import { type SignInWordAdditions, type SignInWords, signInWords } from '../../shared/sign-in-words.ts';

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
 * The catalog file at `file`: JSON `{definitions: [...], sign_in_words?: {sign_in,
 * sign_in_ambiguous, single_sign_on, identity_providers, passkey}}` valid against `SiteVerificationCatalog` (strict; an enabled entry names its
 * `reviewed_fixture`; at most 256 entries, unique by id and version; at most 200 added phrases
 * per word list).
 * @throws SiteCatalogError when the file cannot be read, is not JSON or does not validate.
 */
export function readSiteCatalog(file: string): { definitions: SiteVerificationDefinition[]; signInWords: SignInWordAdditions | undefined } {
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
  return { definitions: parsed.data.definitions, signInWords: parsed.data.sign_in_words };
}

/**
 * The host's sign-in knowledge in use: the enabled definitions, looked up by origin (letter case
 * ignored; when several enabled entries name one origin, the highest version wins), the identity
 * providers they name, and the sign-in word lists (built-in plus the operator's additions).
 */
export class SiteCatalog {
  readonly #byOrigin = new Map<string, SiteVerificationDefinition>();
  readonly #byIdentityProvider = new Map<string, SiteVerificationDefinition>();
  /** The word lists the sign-in evidence reads titles, headings and buttons with. */
  readonly words: SignInWords;

  constructor(definitions: readonly SiteVerificationDefinition[], wordAdditions?: SignInWordAdditions) {
    for (const definition of definitions) {
      if (!definition.enabled) continue;
      const origin = definition.origin.toLowerCase();
      const current = this.#byOrigin.get(origin);
      if (current === undefined || definition.version > current.version) this.#byOrigin.set(origin, definition);
    }
    for (const definition of this.#byOrigin.values()) {
      for (const provider of definition.identity_providers ?? []) this.#byIdentityProvider.set(provider.toLowerCase(), definition);
    }
    this.words = signInWords(wordAdditions);
  }

  /** The enabled definition that names `origin` as one of its identity providers, if any. */
  identityProviderOf(origin: string): SiteVerificationDefinition | undefined {
    return this.#byIdentityProvider.get(origin.toLowerCase());
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
