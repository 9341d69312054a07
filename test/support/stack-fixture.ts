import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, test } from 'vitest';
import { hostProfileId } from '../../edge/profiles/bindings.ts';
import type { AccountSite } from '../../scripts/account-site.ts';
import { ApiClient } from '../../scripts/api-client.ts';
import { type EdgeRuntime, type LocalStack, type LocalStackOptions, startLocalStack } from '../../scripts/local-stack.ts';
import { signInAsPerson } from '../../scripts/person-at-browser.ts';
import type { RunView } from '../../shared/api.ts';
import type { SiteVerificationDefinition } from '../../shared/authentication.ts';
import { type FixtureServer, startFixtureServer } from './fixture-server.ts';
import { hostNamespaces } from './host-network.ts';
import { until } from './until.ts';

/** A web site a file's runs visit: anything that can be closed after the file. */
export interface Site {
  close(): Promise<void>;
}

/** How an end-to-end file's stack and site are started. */
export interface StackTestOptions<S extends Site = FixtureServer> extends LocalStackOptions {
  /** Starts the file's web site; default the fixture server (test/support/fixture-server.ts). */
  site?: () => Promise<S>;
  /**
   * The host's reviewed site definitions, made from the started site: written to a catalog file
   * (`HOST_SITE_DEFINITIONS`, removed with the stack). The stack then starts after the site.
   */
  siteDefinitions?: (site: S) => SiteVerificationDefinition[];
  /**
   * More environment of the browser host, made from the started site (e.g. `HOST_EGRESS_ALLOW`
   * naming the site's identity provider). The stack then starts after the site.
   */
  hostVarsOf?: (site: S) => Record<string, string>;
  /**
   * More vars of the edge, made from the started site (e.g. `ANTHROPIC_BASE_URL` naming a stand-in
   * of a vendor's API). The stack then starts after the site.
   */
  edgeVarsOf?: (site: S) => Record<string, string>;
  /**
   * Hosts (e.g. `['host-3']`, with `hosts: 3`) that run in a network namespace of their own, so
   * that `stack.hosts[i].cut()` takes their link down (test/support/host-network.ts; where
   * namespaces cannot be made, a cut freezes the host instead). The stack's loopback ports and, when
   * the site is started first (it then is), the site's port are bridged into each.
   */
  isolatedHosts?: readonly string[];
}

/** `fn` once: later calls return the first call's promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= fn();
    return done;
  };
}

/** A temporary site catalog of `definitions`; its path and how to remove it. */
function siteCatalog(definitions: SiteVerificationDefinition[]): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'site-catalog-'));
  const path = join(dir, 'catalog.json');
  writeFileSync(path, JSON.stringify({ definitions }));
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts the stack of `options` as {@link stackTest} does (a fresh database unless they say
 * otherwise; the processes' output echoed when `E2E_ECHO=1`), with the site's definitions in the
 * host's catalog when there are some; `stop` stops it once and removes the catalog. For files that
 * run several stacks at once.
 */
export async function startStack<S extends Site>(options: StackTestOptions<S>, site?: S): Promise<LocalStack> {
  const { site: _startSite, siteDefinitions, hostVarsOf, edgeVarsOf, isolatedHosts, ...stackOptions } = options;
  const sitePort = site && 'origin' in site && typeof site.origin === 'string' ? Number(new URL(site.origin).port) : undefined;
  const catalog = site && siteDefinitions ? siteCatalog(siteDefinitions(site)) : undefined;
  try {
    const stack = await startLocalStack({
      database: 'fresh',
      echo: process.env.E2E_ECHO === '1',
      ...stackOptions,
      ...(isolatedHosts ? { hostNetwork: hostNamespaces(isolatedHosts, sitePort ? [sitePort] : []) } : {}),
      edgeVars: { ...(site && edgeVarsOf ? edgeVarsOf(site) : {}), ...stackOptions.edgeVars },
      hostVars: {
        ...(catalog ? { HOST_SITE_DEFINITIONS: catalog.path } : {}),
        ...(site && hostVarsOf ? hostVarsOf(site) : {}),
        ...stackOptions.hostVars,
      },
    });
    const stop = once(async () => {
      await stack.stop();
      catalog?.remove();
    });
    return { ...stack, stop };
  } catch (error) {
    catalog?.remove();
    throw error;
  }
}

/** API clients of the stack's edge with each local principal's token. */
export function clientsOf(stack: LocalStack): Pick<Stacked, 'agent' | 'owner' | 'operator'> {
  return {
    agent: new ApiClient(stack.edgeUrl, stack.tokens.agent),
    owner: new ApiClient(stack.edgeUrl, stack.tokens.owner),
    operator: new ApiClient(stack.edgeUrl, stack.tokens.operator),
  };
}

/**
 * The end-to-end test API: `test` with, each set up once for the file (for the first test or
 * hook that names it) and torn down after the file's last test:
 * - `site`: the file's web site (`options.site`, default the fixture server);
 * - `stack`: the real processes (`startLocalStack` with `options`, a fresh database by default);
 * - `agent`, `owner`, `operator`: API clients of the stack's edge with each local principal's token;
 * - `ownerId`: the local owner's principal id, as the edge's database has it.
 */
export function stackTest<S extends Site = FixtureServer>(options: StackTestOptions<S> = {}) {
  return buildStackTest(options, () => {});
}

/** {@link stackTest}, telling `started` how to end each site and stack it starts (once, whoever calls it first). */
function buildStackTest<S extends Site>(options: StackTestOptions<S>, started: (end: () => Promise<void>) => void) {
  const startSite = options.site ?? (startFixtureServer as unknown as () => Promise<S>);
  const withSite = test.extend('site', { scope: 'file' }, async ({}, { onCleanup }): Promise<S> => {
    const site = await startSite();
    const close = once(() => site.close());
    started(close);
    onCleanup(close);
    return site;
  });
  const begin = async (site: S | undefined, onCleanup: (cleanup: () => Promise<void>) => void): Promise<LocalStack> => {
    const stack = await startStack(options, site);
    started(stack.stop);
    onCleanup(stack.stop);
    return stack;
  };
  const withStack =
    options.siteDefinitions || options.hostVarsOf || options.edgeVarsOf || options.isolatedHosts
      ? withSite.extend('stack', { scope: 'file' }, ({ site }, { onCleanup }) => begin(site, onCleanup))
      : withSite.extend('stack', { scope: 'file' }, ({}, { onCleanup }) => begin(undefined, onCleanup));
  return withStack
    .extend('agent', { scope: 'file' }, ({ stack }) => clientsOf(stack).agent)
    .extend('owner', { scope: 'file' }, ({ stack }) => clientsOf(stack).owner)
    .extend('operator', { scope: 'file' }, ({ stack }) => clientsOf(stack).operator)
    .extend('ownerId', { scope: 'file' }, async ({ stack }) => {
      const [rows] = await stack.queryD1("SELECT owner_id FROM principals WHERE kind = 'owner' LIMIT 1");
      return String(rows?.[0]?.owner_id);
    });
}

/** The end-to-end test API of {@link stackTest}. */
export type StackTest<S extends Site = FixtureServer> = ReturnType<typeof stackTest<S>>;

/**
 * A {@link stackTest} for one `describe` block of a file, whose stack and site end after that
 * block's last test rather than the file's: for a second stack beside the file's, or for the same
 * block run on several runtimes one after another (see {@link stackTestPerRuntime}). Call it at the
 * file's top level (where file fixtures are declared) and the function it returns inside the block.
 */
export function blockStackTest<S extends Site = FixtureServer>(options: StackTestOptions<S> = {}): () => StackTest<S> {
  const started: Array<() => Promise<void>> = [];
  // Ended in the reverse order of their start.
  const api = buildStackTest(options, (end) => started.unshift(end));
  return () => {
    afterAll(async () => {
      for (const end of started) await end();
    });
    return api;
  };
}

/**
 * For a file that runs the same block of tests on each of `runtimes`, one after another: a
 * {@link blockStackTest} per runtime, so that no two runtimes' stacks run at once. The function
 * returned, called inside a runtime's block, gives that runtime's test API.
 */
export function stackTestPerRuntime<R extends EdgeRuntime, S extends Site = FixtureServer>(
  runtimes: readonly R[],
  options: StackTestOptions<S> = {},
): (runtime: R) => StackTest<S> {
  const perRuntime = new Map(runtimes.map((runtime) => [runtime, blockStackTest<S>({ ...options, runtime })]));
  return (runtime) => perRuntime.get(runtime)!();
}

/** What a {@link stackTest} gives a test, for the file's helpers to take the part they use. */
export interface Stacked<S extends Site = FixtureServer> {
  readonly stack: LocalStack;
  readonly site: S;
  readonly agent: ApiClient;
  readonly owner: ApiClient;
  readonly operator: ApiClient;
  readonly ownerId: string;
}

/**
 * Polls the run (read with `client`, every 250 ms) until its state is one of `states`; resolves
 * with the run then. Fails after `timeoutMs`, saying which state the run was in.
 */
export async function runReaches(client: ApiClient, runId: string, states: readonly RunView['state'][], timeoutMs = 60_000): Promise<RunView> {
  let last: RunView | undefined;
  return until(
    async () => {
      last = await client.run(runId);
      return states.includes(last.state) ? last : undefined;
    },
    () => `run ${runId} to be ${states.join(' or ')} (it is ${last?.state})`,
    timeoutMs,
    250,
  );
}

/** The user-data directory of the owner's `profile` on the stack's host (what the person's browser opens). */
export async function hostProfileDir({ stack, ownerId }: Pick<Stacked, 'stack' | 'ownerId'>, profile: string): Promise<string> {
  return join(stack.profilesDir, await hostProfileId(ownerId, profile));
}

/**
 * The person at the host's headed window signs in to the account site as `username` (password
 * `<username>-pass`) in the owner's `profile` (scripts/person-at-browser.ts; at most a minute).
 */
export async function personSignsIn(world: Pick<Stacked<AccountSite>, 'stack' | 'site' | 'ownerId'>, profile: string, username: string): Promise<void> {
  const profileDir = await hostProfileDir(world, profile);
  await signInAsPerson({ profileDir, origin: world.site.origin, username, password: `${username}-pass`, timeoutMs: 60_000 });
}
