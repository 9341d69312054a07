/**
 * `npm run memory:evaluate -- [options]`: the memory evidence (issue 34, ADR-0168). Runs the frozen
 * development and holdout corpora (shared/memory-corpora/) three times through the anticipation
 * path runs take (edge/memories/anticipate.ts) with the chosen provider, prints recall,
 * represented seeded clauses, boundary failures, provider calls and cost per repeat and corpus,
 * and the publication gates, and writes the evidence bundle as JSON.
 *
 *   --provider embedded|model   embedded (default): the lexical anticipator; model: the vendor SDK
 *                               adapter, with ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL and MEMORY_MODEL
 *   --provider-module <path>    a module exporting `provider: AnticipationProvider` instead
 *   --profile <name>            the policy profile the evidence is for (default: default)
 *   --edge <url> --token <t>    read that profile's version and hash from a running edge (an
 *                               operator's token); without --edge: the built-in default profile
 *   --out <file>                where the bundle goes (default: evidence/memory-evidence-<provider>-<hash8>.json)
 *   --publish                   POST the bundle to <edge>/v1/memory-evidence (needs --edge, --token)
 *
 * Exit codes: 0 every gate passed (and, with --publish, the edge recorded it); 1 a gate failed or
 * the edge refused the bundle; 2 a usage error; 3 the edge could not be reached or answered
 * something that is not the API.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { evaluateProvider } from '../edge/memories/evaluation.ts';
import { embeddedAnticipator } from '../edge/memories/lexical-anticipator.ts';
import { anticipationProviderFrom } from '../edge/memories/provider.ts';
import { canonicalHash } from '../edge/policy/canonical-hash.ts';
import { DEFAULT_PROFILE_BODY, DEFAULT_PROFILE_VERSION } from '../edge/policy/profile.ts';
import type { AnticipationProvider } from '../shared/memories.ts';
import { FROZEN_CORPORA } from '../shared/memory-corpora.ts';
import { EvidenceRecordView } from '../shared/memory-evidence.ts';
import { PolicyProfileView } from '../shared/policy.ts';
import { ApiClient, ApiRequestError } from './api-client.ts';
import { formatEvaluation, formatRepeat } from './memory-evaluation/report.ts';

const USAGE = `usage: npm run memory:evaluate -- [options]

options:
  --provider embedded|model   the anticipation provider (default: embedded)
                              model needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL and MEMORY_MODEL are optional
  --provider-module <path>    a module exporting \`provider\` (an AnticipationProvider) instead
  --profile <name>            the policy profile the evidence is for (default: default)
  --edge <url>                read the profile's version and hash from this edge (else: built-in default)
  --token <token>             an operator's token for --edge (default: OPERATOR_TOKEN)
  --out <file>                the bundle's file (default: evidence/memory-evidence-<provider>-<hash8>.json)
  --publish                   POST the bundle to <edge>/v1/memory-evidence
  --help                      this text

exit codes: 0 all gates passed, 1 a gate failed or the edge refused, 2 usage error, 3 edge unreachable`;

/** A mistake in the command line: printed with the usage text, exit code 2. */
class UsageError extends Error {}

/** Longest one request to the edge may take, in ms: an edge that never answers ends the command (exit 3). */
const EDGE_TIMEOUT_MS = 10_000;

/** The parsed command line. */
interface Options {
  readonly provider: () => Promise<AnticipationProvider>;
  readonly profile: string;
  readonly edge?: string;
  readonly token?: string;
  readonly out?: string;
  readonly publish: boolean;
}

/** The options of `argv`. @throws UsageError */
function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv): Options | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: false,
    options: {
      provider: { type: 'string' },
      'provider-module': { type: 'string' },
      profile: { type: 'string' },
      edge: { type: 'string' },
      token: { type: 'string' },
      out: { type: 'string' },
      publish: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  const known = new Set(['provider', 'provider-module', 'profile', 'edge', 'token', 'out', 'publish', 'help']);
  const unknown = Object.keys(values).filter((key) => !known.has(key));
  if (unknown.length > 0) throw new UsageError(`unknown option --${unknown[0]}`);
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(' ')}`);
  for (const key of ['provider', 'provider-module', 'profile', 'edge', 'token', 'out'] as const) {
    if (values[key] !== undefined && typeof values[key] !== 'string') throw new UsageError(`--${key} needs a value`);
  }
  if (values.help) return 'help';
  const string = (value: unknown) => (typeof value === 'string' && value.length > 0 ? value : undefined);
  const module = string(values['provider-module']);
  const kind = string(values.provider);
  if (module && kind) throw new UsageError('give --provider or --provider-module, not both');
  if (kind !== undefined && kind !== 'embedded' && kind !== 'model') throw new UsageError(`unknown provider ${kind}: embedded or model`);
  let provider: Options['provider'] = () => Promise.resolve(embeddedAnticipator);
  if (module) provider = () => providerOfModule(module);
  if (kind === 'model') {
    const apiKey = env.ANTHROPIC_API_KEY;
    if (!apiKey) throw new UsageError('--provider model needs ANTHROPIC_API_KEY');
    // The edge's own choice from the same settings, so the evidence names the provider runs use.
    provider = () => Promise.resolve(anticipationProviderFrom(env));
  }
  const edge = string(values.edge)?.replace(/\/+$/, '');
  if (edge !== undefined && !/^https?:\/\/\S+$/.test(edge)) throw new UsageError(`the edge URL ${edge} is not http or https`);
  const token = string(values.token) ?? env.OPERATOR_TOKEN;
  if (edge && !token) throw new UsageError('--edge needs an operator token: --token or OPERATOR_TOKEN');
  if (values.publish && !edge) throw new UsageError('--publish needs --edge <url> and --token <operator token>');
  return {
    provider,
    profile: string(values.profile) ?? 'default',
    ...(edge ? { edge, token } : {}),
    ...(string(values.out) ? { out: string(values.out) } : {}),
    publish: values.publish === true,
  };
}

/** The `provider` export of the module at `path` (relative to the working directory). @throws UsageError when it does not load or exports none */
async function providerOfModule(path: string): Promise<AnticipationProvider> {
  let loaded: { provider?: Partial<AnticipationProvider> };
  try {
    loaded = (await import(pathToFileURL(resolve(path)).href)) as typeof loaded;
  } catch (error) {
    throw new UsageError(`the provider module ${path} could not be loaded: ${error instanceof Error ? error.message : String(error)}`);
  }
  const provider = loaded.provider;
  if (!provider || typeof provider.id !== 'string' || typeof provider.anticipate !== 'function') {
    throw new UsageError(`${path} exports no \`provider\` with an id and anticipate()`);
  }
  return provider as AnticipationProvider;
}

/** The profile's name, version and hash: read from the edge, or the built-in default's. @throws UsageError */
async function profileOf(options: Options): Promise<{ name: string; version: number; hash: string }> {
  if (options.edge && options.token) {
    const client = new ApiClient(options.edge, options.token, EDGE_TIMEOUT_MS);
    const { body } = await client.request('GET', `/v1/policy-profiles/${encodeURIComponent(options.profile)}`, PolicyProfileView);
    return { name: body.name, version: body.version, hash: body.hash };
  }
  if (options.profile !== 'default') throw new UsageError(`the policy profile ${options.profile} is read from an edge: give --edge and --token`);
  // As the edge computes the built-in default's hash (edge/policy/profile.ts profileOfRow).
  return { name: 'default', version: DEFAULT_PROFILE_VERSION, hash: await canonicalHash(DEFAULT_PROFILE_BODY) };
}

/** Runs the command line; the exit code. */
async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let options: Options | 'help' | undefined;
  let provider: AnticipationProvider;
  let profile: Awaited<ReturnType<typeof profileOf>>;
  try {
    options = parseCommandLine(argv, env);
    if (options === 'help') {
      console.log(USAGE);
      return 0;
    }
    provider = await options.provider();
    profile = await profileOf(options);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`memory:evaluate: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    return edgeFailure(error, options === 'help' ? undefined : options);
  }
  console.log(`memory:evaluate: provider ${provider.id}, policy profile ${profile.name} v${profile.version} (${profile.hash.slice(0, 12)}…)`);
  const failures = new Map<string, number>();
  const bundle = await evaluateProvider(provider, FROZEN_CORPORA, profile, {
    onRepeat: (index, repeat) => console.log(formatRepeat(index, repeat)),
    onFailure: (_caseId, message) => failures.set(message, (failures.get(message) ?? 0) + 1),
  });
  for (const [message, cases] of failures) console.log(`provider failed on ${cases} case run(s): ${message}`);
  console.log(formatEvaluation(bundle));
  const slug = provider.id.replace(/[^A-Za-z0-9._-]+/g, '-');
  const out = resolve(options.out ?? `evidence/memory-evidence-${slug}-${profile.hash.slice(0, 8)}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(bundle, null, 2)}\n`);
  console.log(`evidence bundle written to ${out}`);
  if (options.publish && options.edge && options.token) {
    try {
      const { body } = await new ApiClient(options.edge, options.token, EDGE_TIMEOUT_MS).request('POST', '/v1/memory-evidence', EvidenceRecordView, bundle);
      console.log(`published to ${options.edge} as evidence ${body.id}`);
    } catch (error) {
      return edgeFailure(error, options);
    }
  }
  return bundle.passed ? 0 : 1;
}

/** Prints why the edge failed us; 1 when it refused with an error code, 3 when it did not answer. */
function edgeFailure(error: unknown, options: Options | undefined): number {
  if (error instanceof ApiRequestError && error.code !== 'unparsed') {
    console.error(`memory:evaluate: the edge refused: ${error.code}: ${error.message}`);
    return 1;
  }
  console.error(`memory:evaluate: no answer from the API at ${options?.edge}: ${error instanceof Error ? error.message : String(error)}`);
  return 3;
}

process.exitCode = await main(process.argv.slice(2), process.env);
