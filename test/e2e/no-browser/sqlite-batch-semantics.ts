import process from 'node:process';
import { and, count, eq, sql } from 'drizzle-orm';
import { translateConstraint } from '../../../edge/db/constraints.ts';
import { rowsChanged } from '../../../edge/db/rows-changed.ts';
import { approvals, effects, grants, grantUses, messages, type RunRow, runs, toolCalls } from '../../../edge/db/schema.ts';
import { openSqliteDatabase } from '../../../edge/db/sqlite.ts';
import { DomainError } from '../../../edge/domain-error.ts';

/**
 * What the edge relies on from its database, exercised on a fresh SQLite file through the same
 * module the Deno and Node entries use (edge/db/sqlite.ts), with the real migrations. Plain data,
 * so the same scenario can run in Node (the test process) and in Deno (this file as a script:
 * `deno run ... sqlite-batch-semantics.ts <file> <migrations folder>` prints the report as JSON)
 * and the two reports can be compared.
 */
export interface BatchSemanticsReport {
  /** Triggers the migrations created, by name. */
  triggers: string[];
  /** Rows of drizzle's migrations table after the file was opened twice. */
  migrationsRecorded: number;
  /** A batch whose last statement a trigger refuses: the API error it becomes, and what survived. */
  refusedByTrigger: { error: string; runRevision: number | null; callsWritten: number };
  /** A batch whose last statement the one-active-call index refuses. */
  refusedByIndex: { error: string; messagesWritten: number };
  /** A call made active on a run that is not running. */
  inactiveRunGuard: string;
  /** A message for a run that does not exist. */
  foreignKeyRefused: boolean;
  /** The same conditional transition twice: rows changed each time. */
  conditionalUpdate: [number, number];
  /** A batch that succeeds: both writes visible, and the effect ended with its call (a trigger). */
  committedBatch: { effects: number; callState: string | undefined; effectState: string | undefined };
  /**
   * A pending approval decided: the run that waited for it runs again (a trigger), and the
   * deciding update counts its own row only (libSQL leaves out rows its triggers changed).
   */
  decisionResumesRun: { runState: string | undefined; rowsChanged: number };
  /**
   * Eight concurrent batches each charging one use of a three-use grant (the grant guard reads
   * `uses`, the same batch increments it): how many were charged, the final count, and how many
   * were refused as exhausted. Holds only if batches run one at a time, as on D1.
   */
  concurrentGrantCharges: { charged: number; uses: number | undefined; refusedAsExhausted: number };
}

/** The messages of an error and its causes, joined. */
function messagesOf(error: unknown): string {
  const parts: string[] = [];
  for (let current = error; current instanceof Error; current = current.cause) parts.push(current.message);
  return parts.join(' | ');
}

/** Runs the scenario against a new SQLite file at `path` (absolute) and reports what happened. */
export async function exerciseBatchSemantics(path: string, migrationsFolder: string): Promise<BatchSemanticsReport> {
  await openSqliteDatabase({ path, migrationsFolder }).then((first) => first.close());
  const database = await openSqliteDatabase({ path, migrationsFolder });
  const db = database.drizzle();
  try {
    const now = 1_800_000_000_000;
    const run = (id: string, state: RunRow['state']) => ({
      id,
      ownerId: 'prn_owner',
      createdBy: 'prn_owner',
      profileId: 'me',
      intent: 'check batch semantics',
      origins: ['http://127.0.0.1:8080'],
      state,
      deadlineAt: now + 60_000,
      createdAt: now,
      updatedAt: now,
    });
    const call = (id: string, runId: string, state: (typeof toolCalls.$inferInsert)['state']) => ({
      id,
      runId,
      principalId: 'prn_agent',
      tool: 'browser.act',
      version: '1.2.0',
      arguments: {},
      argumentsHash: 'h',
      state,
      phases: {},
      createdAt: now,
      updatedAt: now,
    });
    const errorCodeOf = (error: unknown) => {
      const translated = translateConstraint(error);
      return translated instanceof DomainError ? translated.code : `untranslated: ${String(error)}`;
    };
    await db.insert(runs).values([run('run_a', 'running'), run('run_b', 'queued')]);

    const triggers = (await db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name`)).map((row) => row.name);
    const [recorded] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM __drizzle_migrations`);

    let refusedByTrigger = 'not refused';
    try {
      await db.batch([
        db.update(runs).set({ latestRevision: 7 }).where(eq(runs.id, 'run_a')),
        db.insert(toolCalls).values(call('call_done', 'run_a', 'succeeded')),
        // The watermark guard: an effect only for a call that is dispatching.
        db.insert(effects).values({ id: 'eff_1', toolCallId: 'call_done', runId: 'run_a', state: 'committed', committedAt: now }),
      ]);
    } catch (error) {
      refusedByTrigger = errorCodeOf(error);
    }
    const afterTrigger = await db.select({ latestRevision: runs.latestRevision }).from(runs).where(eq(runs.id, 'run_a')).get();
    const [callsAfterTrigger] = await db.select({ n: count() }).from(toolCalls);

    await db.insert(toolCalls).values(call('call_active', 'run_a', 'dispatching'));
    let refusedByIndex = 'not refused';
    try {
      await db.batch([
        db.insert(messages).values({ id: 'msg_1', runId: 'run_a', principalId: 'prn_owner', trust: 'trusted', text: 'hello', createdAt: now }),
        db.insert(toolCalls).values(call('call_second', 'run_a', 'waiting_for_approval')),
      ]);
    } catch (error) {
      refusedByIndex = errorCodeOf(error);
    }
    const [messagesAfterIndex] = await db.select({ n: count() }).from(messages);

    let inactiveRunGuard = 'not refused';
    try {
      await db.insert(toolCalls).values(call('call_on_queued', 'run_b', 'dispatching'));
    } catch (error) {
      inactiveRunGuard = errorCodeOf(error);
    }

    let foreignKeyRefused = false;
    try {
      await db.insert(messages).values({ id: 'msg_orphan', runId: 'run_missing', principalId: 'prn_owner', trust: 'trusted', text: 'x', createdAt: now });
    } catch (error) {
      foreignKeyRefused = /FOREIGN KEY/i.test(String((error as { cause?: unknown }).cause ?? error));
    }

    await db.batch([
      db.insert(effects).values({ id: 'eff_2', toolCallId: 'call_active', runId: 'run_a', state: 'committed', committedAt: now }),
      db.update(toolCalls).set({ state: 'succeeded' }).where(eq(toolCalls.id, 'call_active')),
    ]);
    const [effectsCommitted] = await db.select({ n: count() }).from(effects);
    const active = await db.select({ state: toolCalls.state }).from(toolCalls).where(eq(toolCalls.id, 'call_active')).get();
    const finished = await db.select({ state: effects.state }).from(effects).where(eq(effects.id, 'eff_2')).get();

    await db.insert(runs).values(run('run_c', 'running'));
    await db.insert(toolCalls).values(call('call_parked', 'run_c', 'waiting_for_approval'));
    await db.update(runs).set({ state: 'waiting_for_approval' }).where(eq(runs.id, 'run_c'));
    await db.insert(approvals).values({
      id: 'apr_1',
      toolCallId: 'call_parked',
      runId: 'run_c',
      ownerId: 'prn_owner',
      state: 'pending',
      argumentsHash: 'h',
      policyHash: 'p',
      createdAt: now,
    });
    const decided = await db
      .update(approvals)
      .set({ state: 'approved', decidedAt: now + 1 })
      .where(and(eq(approvals.id, 'apr_1'), eq(approvals.state, 'pending')))
      .run();
    const resumed = await db.select({ state: runs.state }).from(runs).where(eq(runs.id, 'run_c')).get();

    await db.insert(grants).values({
      id: 'grt_1',
      ownerId: 'prn_owner',
      tool: 'browser.act',
      origin: 'http://127.0.0.1:8080',
      maxUses: 3,
      expiresAt: now + 60_000,
      policyHash: 'p',
      createdAt: now,
    });
    const charges = Array.from({ length: 8 }, (_, index) => `call_charge_${index}`);
    await db.insert(toolCalls).values(charges.map((id) => call(id, 'run_b', 'succeeded')));
    const outcomes = await Promise.allSettled(
      charges.map((id) =>
        db.batch([
          db.insert(grantUses).values({ toolCallId: id, grantId: 'grt_1', chargedAt: now }),
          db
            .update(grants)
            .set({ uses: sql`${grants.uses} + 1` })
            .where(eq(grants.id, 'grt_1')),
        ]),
      ),
    );
    const grant = await db.select({ uses: grants.uses }).from(grants).where(eq(grants.id, 'grt_1')).get();

    const finish = () =>
      db
        .update(runs)
        .set({ state: 'completed' })
        .where(and(eq(runs.id, 'run_a'), eq(runs.state, 'running')))
        .run();
    const conditionalUpdate: [number, number] = [rowsChanged(await finish()), rowsChanged(await finish())];

    return {
      triggers,
      migrationsRecorded: recorded?.n ?? 0,
      refusedByTrigger: { error: refusedByTrigger, runRevision: afterTrigger?.latestRevision ?? null, callsWritten: callsAfterTrigger?.n ?? -1 },
      refusedByIndex: { error: refusedByIndex, messagesWritten: messagesAfterIndex?.n ?? -1 },
      inactiveRunGuard,
      foreignKeyRefused,
      conditionalUpdate,
      committedBatch: { effects: effectsCommitted?.n ?? -1, callState: active?.state, effectState: finished?.state },
      decisionResumesRun: { runState: resumed?.state, rowsChanged: rowsChanged(decided) },
      concurrentGrantCharges: {
        charged: outcomes.filter((outcome) => outcome.status === 'fulfilled').length,
        uses: grant?.uses,
        refusedAsExhausted: outcomes.filter((outcome) => outcome.status === 'rejected' && /guard:grant_exhausted/.test(messagesOf(outcome.reason))).length,
      },
    };
  } finally {
    database.close();
  }
}

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  const [path, migrationsFolder] = process.argv.slice(2);
  if (!path || !migrationsFolder) throw new Error('usage: sqlite-batch-semantics.ts <new sqlite file> <migrations folder>');
  console.log(JSON.stringify(await exerciseBatchSemantics(path, migrationsFolder)));
}
