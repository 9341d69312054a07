import { eq, getTableColumns, sql } from 'drizzle-orm';
import type { Principal } from '../auth/principal.ts';
import { type GrantRow, type PolicyProfileRow, type RunRow, runs } from '../db/schema.ts';
import { DomainError } from '../domain-error.ts';
import type { Ports } from '../ports.ts';
import { admissionStatement, type Gate, refuseAdmission } from '../quotas/rates.ts';
import { expireIfPastDeadline } from '../runs/lifecycle.ts';
import { authorityOf, type TurnContext } from './turn.ts';

/**
 * Everything a proposal reads before it decides, read with one statement (issue 14: D1 statements
 * per proposal): the run; whether the owner revoked its profile; the newest version of its policy
 * profile; the ids of its calls still `dispatching` (a crashed edge's leftovers); the id of an
 * `uncertain` call with the same arguments hash; and the proposing turn (authority from the
 * newest message, taint from any result since it; see turn.ts).
 */
export interface ProposalContext {
  readonly run: RunRow;
  readonly profileRevoked: boolean;
  /** The newest version of the run's policy profile, when one is stored (else the built-in default applies). */
  readonly policyProfile: PolicyProfileRow | undefined;
  readonly dispatchingCallIds: readonly string[];
  readonly uncertainCallId: string | undefined;
  readonly turn: TurnContext;
  /** The owner has a webhook (edge/notifications/webhooks.ts): a parked call is notified. */
  readonly ownerHasWebhook: boolean;
  /**
   * For an act: the run's stored results of the act's revision that mention its reference
   * (`[ref=...]`), newest first, at most 32 (act-target.ts reads its target from them); undefined
   * when they were too large to read at once.
   */
  readonly actResults?: readonly unknown[];
  /**
   * For an act: the owner's live grants of the act's tool (not revoked, not expired, uses left),
   * soonest to expire first; undefined when there were more than {@link MAX_PRELOADED_GRANTS}
   * (grants.ts `coveringGrant` then reads them itself).
   */
  readonly grantCandidates?: readonly GrantRow[];
}

/** Most live grants of one tool read with a proposal. */
export const MAX_PRELOADED_GRANTS = 64;
/** Most stored results searched for an act's reference (as act-target.ts). */
const MAX_RESULTS_SEARCHED = 32;
/** Most characters of stored results read with a proposal in one value (D1's limit is 2,000,000 bytes). */
const MAX_PRELOADED_RESULT_CHARS = 1_500_000;

interface StoredGrant {
  id: string;
  owner_id: string;
  tool: string;
  actions: string[] | null;
  origin: string;
  max_uses: number;
  uses: number;
  expires_at: number;
  policy_profile: string;
  policy_hash: string;
  revoked_at: number | null;
  created_at: number;
}

interface StoredPolicy {
  id: string;
  name: string;
  version: number;
  rules: unknown[];
  denies: unknown[];
  hash: string;
  created_by: string;
  created_at: number;
}

/**
 * What the proposal reads besides the run, each a value correlated with the outer `runs` row
 * (column names are written out: the subqueries refer to it).
 */
function contextColumns(argumentsHash: string, now: number, act: ProposedAct | undefined) {
  const newestMessageAt = sql`(select max(m.created_at) from messages m where m.run_id = "runs"."id")`;
  return {
    bindingState: sql<string | null>`(select b.state from profile_bindings b where b.owner_id = "runs"."owner_id" and b.profile_id = "runs"."profile_id")`,
    policy: sql<
      string | null
    >`(select json_object('id', p.id, 'name', p.name, 'version', p.version, 'rules', json(p.rules), 'denies', json(p.denies), 'hash', p.hash, 'created_by', p.created_by, 'created_at', p.created_at)
      from policy_profiles p where p.name = "runs"."policy_profile" order by p.version desc limit 1)`,
    dispatching: sql<string>`(select json_group_array(c.id) from tool_calls c where c.run_id = "runs"."id" and c.state = 'dispatching')`,
    uncertain: sql<
      string | null
    >`(select c.id from tool_calls c where c.run_id = "runs"."id" and c.arguments_hash = ${argumentsHash} and c.state = 'uncertain' limit 1)`,
    newestMessage: sql<string | null>`(select json_object('trust', m.trust, 'principal_id', m.principal_id, 'created_at', m.created_at)
      from messages m where m.run_id = "runs"."id" order by m.created_at desc, m.rowid desc limit 1)`,
    tainted: sql<number>`exists (select 1 from tool_calls c where c.run_id = "runs"."id" and c.updated_at >= coalesce(${newestMessageAt}, "runs"."created_at") and c.result is not null)`,
    ownerHasWebhook: sql<number>`exists (select 1 from owner_webhooks w where w.owner_id = "runs"."owner_id")`,
    // Only results of the act's revision, and never more than about 1.5 MB of them in one
    // value (D1 refuses strings over 2 MB): past that the count says so and act-target.ts reads
    // them row by row instead.
    actResults:
      act === undefined
        ? sql<null>`null`
        : sql<string>`(select json_group_array(json(r.result)) from (select c.result, sum(length(c.result)) over (order by c.updated_at desc rows unbounded preceding) as running
            from tool_calls c where c.run_id = "runs"."id" and c.result is not null and json_extract(c.result, '$.revision') = ${act.revision}
            and instr(c.result, ${`[ref=${act.reference}]`}) > 0 order by c.updated_at desc limit ${MAX_RESULTS_SEARCHED}) r where r.running <= ${MAX_PRELOADED_RESULT_CHARS})`,
    actResultsMatched:
      act === undefined
        ? sql<null>`null`
        : sql<number>`(select count(*) from (select 1 from tool_calls c where c.run_id = "runs"."id" and c.result is not null and json_extract(c.result, '$.revision') = ${act.revision}
            and instr(c.result, ${`[ref=${act.reference}]`}) > 0 limit ${MAX_RESULTS_SEARCHED}))`,
    grants:
      act === undefined
        ? sql<null>`null`
        : sql<string>`(select json_group_array(json_object('id', g.id, 'owner_id', g.owner_id, 'tool', g.tool, 'actions', json(g.actions), 'origin', g.origin,
            'max_uses', g.max_uses, 'uses', g.uses, 'expires_at', g.expires_at, 'policy_profile', g.policy_profile, 'policy_hash', g.policy_hash,
            'revoked_at', g.revoked_at, 'created_at', g.created_at))
            from (select * from grants g where g.owner_id = "runs"."owner_id" and g.tool = ${act.tool} and g.revoked_at is null
              and g.expires_at > ${now} and g.uses < g.max_uses order by g.expires_at limit ${MAX_PRELOADED_GRANTS + 1}) g)`,
  };
}

/** An act's tool, reference and revision, when the proposal is one (its target's results and grants are read with it). */
interface ProposedAct {
  readonly tool: string;
  readonly reference: string;
  readonly revision: number;
}

/** The row the proposal's one statement reads: the run and the {@link contextColumns}. */
type ContextRow = { run: RunRow } & { [K in keyof ReturnType<typeof contextColumns>]: ReturnType<typeof contextColumns>[K]['_']['type'] };

/**
 * Reads the {@link ProposalContext} of run `runId` for `principal`'s proposal whose arguments
 * hash to `argumentsHash`; a run past its deadline is ended first (lifecycle.ts
 * `expireIfPastDeadline`, which then reads the run again). With `admission`, the proposal is
 * admitted by the same statement (see {@link readWithAdmission}), so a proposal sends one
 * statement before it decides.
 * @throws DomainError('rate_limited') with Retry-After when `admission` is refused (nothing
 *   counted, nothing read); DomainError('not_found') when there is no such run of the
 *   principal's owner.
 */
export async function loadProposalContext(
  ports: Ports,
  principal: Principal,
  runId: string,
  argumentsHash: string,
  act?: ProposedAct,
  admission?: readonly [Gate, ...Gate[]],
): Promise<ProposalContext> {
  const now = ports.clock.now();
  const columns = contextColumns(argumentsHash, now, act);
  const row =
    admission === undefined
      ? await ports.db
          .select({ run: runs, ...columns })
          .from(runs)
          .where(eq(runs.id, runId))
          .get()
      : await readWithAdmission(ports, runId, columns, admission, now);
  if (!row || row.run.ownerId !== principal.ownerId) throw new DomainError('not_found', `no run ${runId}`);
  const run = await expireIfPastDeadline(ports, row.run);
  const policy = row.policy === null ? undefined : (JSON.parse(row.policy) as StoredPolicy);
  const newest =
    row.newestMessage === null ? undefined : (JSON.parse(row.newestMessage) as { trust: 'trusted' | 'untrusted'; principal_id: string; created_at: number });
  return {
    run,
    profileRevoked: row.bindingState === 'revoked',
    policyProfile:
      policy === undefined
        ? undefined
        : {
            id: policy.id,
            name: policy.name,
            version: policy.version,
            rules: policy.rules,
            denies: policy.denies,
            hash: policy.hash,
            createdBy: policy.created_by,
            createdAt: policy.created_at,
          },
    dispatchingCallIds: JSON.parse(row.dispatching) as string[],
    ...actResultsOf(row.actResults, row.actResultsMatched),
    ...(row.grants === null ? {} : grantsOf(JSON.parse(row.grants) as StoredGrant[])),
    uncertainCallId: row.uncertain ?? undefined,
    ownerHasWebhook: row.ownerHasWebhook === 1,
    turn: {
      authority: authorityOf(run, newest === undefined ? undefined : { trust: newest.trust, principalId: newest.principal_id }),
      tainted: row.tainted === 1,
      startedAt: newest?.created_at ?? run.createdAt,
    },
  };
}

/**
 * The proposal's admission and its read in one statement: the admission upsert
 * (quotas/rates.ts `admissionStatement`) returning, on the first gate's row, the run (as JSON,
 * mapped back through the table's columns) and every context column, each read from the run by
 * id. Rows come back only when the proposal was admitted.
 * @returns the row, or undefined when there is no such run (the proposal still counts).
 * @throws DomainError('rate_limited') with Retry-After when the admission is refused.
 */
async function readWithAdmission(
  ports: Ports,
  runId: string,
  columns: ReturnType<typeof contextColumns>,
  gates: readonly [Gate, ...Gate[]],
  now: number,
): Promise<ContextRow | undefined> {
  const runColumns = Object.entries(getTableColumns(runs));
  // Column names are the schema's own identifiers, written as literals (binding them would cost a parameter each).
  const runJson = sql`json_object(${sql.join(
    runColumns.map(([, column]) => sql`${sql.raw(`'${column.name}'`)}, ${sql.identifier(column.name)}`),
    sql`, `,
  )})`;
  const first = gates[0].key;
  const returned = sql.join(
    Object.entries({ run: runJson, ...columns }).map(
      ([name, expression]) =>
        sql`case when rate_windows.key = ${first} then (select ${expression} from runs where runs.id = ${runId}) end as ${sql.identifier(name)}`,
    ),
    sql`, `,
  );
  const rows = await ports.db.all<Record<string, unknown>>(admissionStatement(gates, now, sql`rate_windows.key as gate, ${returned}`));
  if (rows.length !== gates.length) return refuseAdmission(ports, gates, now);
  const row = rows.find((returnedRow) => returnedRow.gate === first);
  if (row === undefined || typeof row.run !== 'string') return undefined;
  const stored = JSON.parse(row.run) as Record<string, unknown>;
  const run = Object.fromEntries(
    runColumns.map(([key, column]) => {
      const value = stored[column.name];
      return [key, value === null || value === undefined ? null : column.mapFromDriverValue(value)];
    }),
  ) as RunRow;
  return { ...(row as Omit<ContextRow, 'run'>), run };
}

/** The preloaded results, or none when some of those matching did not fit (act-target.ts then reads them). */
function actResultsOf(results: string | null, matched: number | null): { actResults?: unknown[] } {
  if (results === null || matched === null) return {};
  const read = JSON.parse(results) as unknown[];
  return read.length < matched ? {} : { actResults: read };
}

/** The preloaded grants, or none when there were more than could be read at once. */
function grantsOf(stored: StoredGrant[]): { grantCandidates?: GrantRow[] } {
  if (stored.length > MAX_PRELOADED_GRANTS) return {};
  return {
    grantCandidates: stored.map((grant) => ({
      id: grant.id,
      ownerId: grant.owner_id,
      tool: grant.tool,
      actions: grant.actions,
      origin: grant.origin,
      maxUses: grant.max_uses,
      uses: grant.uses,
      expiresAt: grant.expires_at,
      policyProfile: grant.policy_profile,
      policyHash: grant.policy_hash,
      revokedAt: grant.revoked_at,
      createdAt: grant.created_at,
    })),
  };
}
