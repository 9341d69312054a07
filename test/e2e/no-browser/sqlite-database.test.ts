import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { type BatchSemanticsReport, exerciseBatchSemantics } from './sqlite-batch-semantics.ts';

// The Deno and Node edges keep their state in a SQLite file through libSQL. These checks prove
// that the guarantees the pipeline takes from D1 hold there too, on both runtimes: the same
// migrations (triggers included) apply once, a batch is all or nothing, concurrent batches run
// one at a time (a grant is never charged past its uses), foreign keys are enforced, and
// refusals translate to the same API errors as on D1.

const root = join(import.meta.dirname, '..', '..', '..');
const migrations = join(root, 'drizzle');
const scratch = mkdtempSync(join(tmpdir(), 'sqlite-semantics-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const expected: BatchSemanticsReport = {
  triggers: [
    'effects_finish_with_their_call',
    'effects_require_dispatching_call',
    'grant_uses_require_live_grant',
    'runs_resume_when_approval_decided',
    'tool_calls_active_requires_running_run',
  ],
  // Every migration drizzle-kit wrote (drizzle/meta/_journal.json), recorded once.
  migrationsRecorded: (JSON.parse(readFileSync(join(migrations, 'meta', '_journal.json'), 'utf8')) as { entries: unknown[] }).entries.length,
  refusedByTrigger: { error: 'already_decided', runRevision: null, callsWritten: 0 },
  refusedByIndex: { error: 'call_in_progress', messagesWritten: 0 },
  inactiveRunGuard: 'run_not_active',
  foreignKeyRefused: true,
  conditionalUpdate: [1, 0],
  committedBatch: { effects: 1, callState: 'succeeded', effectState: 'succeeded' },
  decisionResumesRun: { runState: 'running', rowsChanged: 1 },
  concurrentGrantCharges: { charged: 3, uses: 3, refusedAsExhausted: 5 },
};

describe('the edge database on a SQLite file', () => {
  it('on Node: migrations with their triggers apply once, a refused batch leaves nothing behind, refusals map to API errors', async () => {
    expect(await exerciseBatchSemantics(join(scratch, 'node.sqlite'), migrations)).toEqual(expected);
  });

  it('on Deno: the same', async () => {
    const { stdout } = await promisify(execFile)(
      join(root, 'node_modules', '.bin', 'deno'),
      [
        'run',
        '--no-lock',
        '--allow-read',
        '--allow-write',
        '--allow-env',
        '--allow-ffi',
        '--allow-sys',
        join(root, 'test', 'e2e', 'no-browser', 'sqlite-batch-semantics.ts'),
        join(scratch, 'deno.sqlite'),
        migrations,
      ],
      { cwd: root, env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' }, timeout: 60_000 },
    );
    expect(JSON.parse(stdout)).toEqual(expected);
  });
});
