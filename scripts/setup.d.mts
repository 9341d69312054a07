/** Types of the plain-JS set-up script's exports (scripts/setup.mjs). */
export type DevVars = Record<'AGENT_TOKEN' | 'OWNER_TOKEN' | 'OPERATOR_TOKEN' | 'HOST_SHARED_SECRET', string> & Record<string, string>;
/** Reads `.dev.vars`; throws when it does not exist (run `npm run setup`). */
export function readDevVars(): DevVars;
/** Applies migrations to a local D1 (default state dir, or `persistTo`) and seeds the local principals. */
export function prepareLocalDatabase(vars: DevVars, persistTo?: string): void;
/** SQL that upserts the local owner, agent and operator with their hashed tokens. */
export function localPrincipalsSql(vars: DevVars, now?: number): string;
/** Copies the API reference's (swagger-ui-dist) and the owner console's (edge/console/assets/) static files into `public/`. */
export function ensureStaticAssets(): void;
/**
 * What `directory`'s npm packages need: `current` (installed from its package-lock.json, by
 * content, and unchanged by npm since), `install` (`npm ci` should run) or `linked` (node_modules
 * is a link whose packages are not recorded as installed from this lock: `npm ci` would empty
 * them through the link, so set-up refuses).
 */
export function npmPackagesState(directory: string): 'current' | 'install' | 'linked';
/** Records in `directory`'s node_modules that it holds the packages of its package-lock.json, as npm left them. */
export function recordNpmPackages(directory: string): void;
