/**
 * `npm run principals -- <command>`: the operator's principals API (issue 32) from a terminal, so
 * no one inserts principal rows by hand. It speaks only HTTP to an edge, as an operator:
 *
 *   create owner [--label <text>]                 a new owner; prints its id and token (shown once)
 *   create agent --owner <owner id> [--label ..]  a new agent acting for that owner; id and token
 *   list                                          every principal (never a token)
 *   rotate <id>                                   a new token for the principal; the old one stops working
 *   revoke <id>                                   the principal's token (and an owner's agents') is refused
 *
 * The edge is `--edge <url>` or EDGE_URL (default http://127.0.0.1:8787); the operator's token is
 * `--token <token>` or OPERATOR_TOKEN, else OPERATOR_TOKEN in .dev.vars (what `npm run setup`
 * writes for the local edge). `--json` prints the edge's answer as JSON instead.
 *
 * Exit codes: 0 done; 1 the edge refused (its error code and message are printed); 2 a usage
 * error; 3 the edge could not be reached or answered something that is not the API.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { IssuedPrincipal, PrincipalList, PrincipalView } from '../shared/api.ts';
import { ApiClient, ApiRequestError } from './api-client.ts';

const USAGE = `usage: npm run principals -- <command> [options]

commands:
  create owner [--label <text>]
  create agent --owner <owner id> [--label <text>]
  list
  rotate <principal id>
  revoke <principal id>

options:
  --edge <url>     the edge (default: EDGE_URL, else http://127.0.0.1:8787)
  --token <token>  an operator's token (default: OPERATOR_TOKEN, else OPERATOR_TOKEN in .dev.vars)
  --json           print the edge's answer as JSON
  --help           this text

exit codes: 0 done, 1 the edge refused, 2 usage error, 3 edge unreachable or not the API`;

/** A mistake in the command line: printed with the usage text, exit code 2. */
class UsageError extends Error {}

/** One command of the line, parsed. */
type Command =
  | { readonly name: 'create'; readonly body: { kind: 'owner'; label?: string } | { kind: 'agent'; owner_id: string; label?: string } }
  | { readonly name: 'list' }
  | { readonly name: 'rotate' | 'revoke'; readonly id: string };

/** The command, edge URL, token and output form of `argv`. @throws UsageError */
function parseCommandLine(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  devVars: () => string | undefined,
): { command: Command; edge: string; token: string; json: boolean } | 'help' {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: false,
    options: {
      edge: { type: 'string' },
      token: { type: 'string' },
      label: { type: 'string' },
      owner: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  const known = new Set(['edge', 'token', 'label', 'owner', 'json', 'help']);
  const unknown = Object.keys(values).filter((key) => !known.has(key));
  if (unknown.length > 0) throw new UsageError(`unknown option --${unknown[0]}`);
  for (const key of ['edge', 'token', 'label', 'owner'] as const) {
    if (values[key] !== undefined && typeof values[key] !== 'string') throw new UsageError(`--${key} needs a value`);
  }
  if (values.help) return 'help';
  const string = (value: unknown) => (typeof value === 'string' ? value : undefined);
  const label = string(values.label);
  const owner = string(values.owner);
  const [name, subject, ...extra] = positionals;
  if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')}`);
  let command: Command;
  if (name === 'create' && subject === 'owner') {
    if (owner !== undefined) throw new UsageError('an owner acts for itself: --owner is for agents');
    command = { name, body: { kind: 'owner', ...(label === undefined ? {} : { label }) } };
  } else if (name === 'create' && subject === 'agent') {
    if (owner === undefined) throw new UsageError('create agent needs --owner <owner id>');
    command = { name, body: { kind: 'agent', owner_id: owner, ...(label === undefined ? {} : { label }) } };
  } else if (name === 'create') {
    throw new UsageError('create what? owner or agent');
  } else if (name === 'list' && subject === undefined) {
    command = { name };
  } else if ((name === 'rotate' || name === 'revoke') && subject !== undefined) {
    command = { name, id: subject };
  } else if (name === 'rotate' || name === 'revoke') {
    throw new UsageError(`${name} needs a principal id`);
  } else {
    throw new UsageError(name === undefined ? 'no command' : `unknown command ${[name, subject].filter(Boolean).join(' ')}`);
  }
  if ((label !== undefined || owner !== undefined) && command.name !== 'create') throw new UsageError('--label and --owner are for create');
  const token = string(values.token) ?? env.OPERATOR_TOKEN ?? /^OPERATOR_TOKEN=(.*)$/m.exec(devVars() ?? '')?.[1]?.trim();
  if (!token) throw new UsageError('no operator token: pass --token or set OPERATOR_TOKEN');
  const edge = (string(values.edge) ?? env.EDGE_URL ?? 'http://127.0.0.1:8787').replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s]+$/.test(edge)) throw new UsageError(`the edge URL ${edge} is not http or https`);
  return { command, edge, token, json: values.json === true };
}

/** Sends `command` to the edge; what to print. @throws ApiRequestError; a TypeError when the edge is unreachable. */
async function run(client: ApiClient, command: Command, json: boolean): Promise<string> {
  const send = async <T extends z.ZodType>(method: string, path: string, schema: T, body?: unknown) =>
    (await client.request(method, path, schema, body)).body as z.infer<T>;
  switch (command.name) {
    case 'create':
    case 'rotate': {
      const issued =
        command.name === 'create'
          ? await send('POST', '/v1/principals', IssuedPrincipal, command.body)
          : await send('POST', `/v1/principals/${encodeURIComponent(command.id)}/rotate`, IssuedPrincipal);
      if (json) return JSON.stringify(issued, null, 2);
      const actsFor = issued.kind === 'agent' ? ` (acts for ${issued.owner_id})` : '';
      const what = command.name === 'create' ? 'created' : 'rotated';
      const old = command.name === 'rotate' ? '\nIts old token is refused from now on (by every edge within 5 s).' : '';
      return `${what} ${issued.kind} ${issued.id}${actsFor}\ntoken: ${issued.token}${old}\nStore the token now: it is not shown again.`;
    }
    case 'list': {
      const { principals } = await send('GET', '/v1/principals', PrincipalList);
      if (json) return JSON.stringify(principals, null, 2);
      const rows = [['id', 'kind', 'owner', 'revoked', 'label'], ...principals.map((p) => [p.id, p.kind, p.owner_id, p.revoked_at ?? '-', p.label])];
      const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
      return rows
        .map((row) =>
          row
            .map((cell, column) => cell.padEnd(widths[column]!))
            .join('  ')
            .trimEnd(),
        )
        .join('\n');
    }
    case 'revoke': {
      const revoked = await send('POST', `/v1/principals/${encodeURIComponent(command.id)}/revoke`, PrincipalView);
      return json ? JSON.stringify(revoked, null, 2) : `revoked ${revoked.kind} ${revoked.id} at ${revoked.revoked_at}`;
    }
  }
}

/** Runs the command line; the exit code. */
async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv, env, () => {
      const path = join(import.meta.dirname, '..', '.dev.vars');
      return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`principals: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed === 'help') {
    console.log(USAGE);
    return 0;
  }
  try {
    console.log(await run(new ApiClient(parsed.edge, parsed.token), parsed.command, parsed.json));
    return 0;
  } catch (error) {
    if (error instanceof ApiRequestError && error.code !== 'unparsed') {
      console.error(`principals: the edge refused: ${error.message}`);
      return 1;
    }
    console.error(`principals: no answer from the API at ${parsed.edge}: ${error instanceof Error ? error.message : String(error)}`);
    return 3;
  }
}

process.exitCode = await main(process.argv.slice(2), process.env);
