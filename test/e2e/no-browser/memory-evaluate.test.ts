import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalHash } from '../../../edge/policy/canonical-hash.ts';
import { DEFAULT_PROFILE_BODY, DEFAULT_PROFILE_VERSION } from '../../../edge/policy/profile.ts';
import { FROZEN_CORPORA } from '../../../shared/memory-corpora.ts';
import { EvidenceBundle, evidenceGates } from '../../../shared/memory-evidence.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'memory-evaluate-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs `npm run memory:evaluate -- <args>` as the operator would; its exit code and output. */
function evaluate(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/toolchain.mjs', 'tsx', 'scripts/memory-evaluate.ts', ...args],
      { cwd: root, timeout: 180_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('npm run memory:evaluate', () => {
  it('passes every gate with the embedded anticipator on the shipped corpora and writes a valid bundle for them', async () => {
    const out = join(scratch, 'embedded.json');
    const run = await evaluate(['--provider', 'embedded', '--out', out]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/holdout_direct_recall\s+\d\.\d{3}\s+at least 0\.95\s+PASS/);
    expect(run.stdout).toMatch(/boundary_failures\s+0\s+at most 0\s+PASS/);
    expect(run.stdout).toContain(`evidence bundle written to ${out}`);
    expect(run.code).toBe(0);
    const bundle = EvidenceBundle.parse(JSON.parse(readFileSync(out, 'utf8')));
    expect(bundle.provider).toBe('embedded-lexical/1');
    expect(bundle.corpora.development.hash).toBe(await canonicalHash(FROZEN_CORPORA.development));
    expect(bundle.corpora.holdout.hash).toBe(await canonicalHash(FROZEN_CORPORA.holdout));
    expect(bundle.policy_profile).toEqual({ name: 'default', version: DEFAULT_PROFILE_VERSION, hash: await canonicalHash(DEFAULT_PROFILE_BODY) });
    expect(bundle.gates).toEqual(evidenceGates(bundle.repeats));
    expect(bundle.passed).toBe(true);
    expect(bundle.cost_usd).toBe(0);
    expect(bundle.provider_calls).toBe(3 * (FROZEN_CORPORA.development.cases.length + FROZEN_CORPORA.holdout.cases.length));
  });

  it('fails the gates with a provider that joins two memories into one prediction, and prints the recall under the floor', async () => {
    const out = join(scratch, 'compound.json');
    const run = await evaluate(['--provider-module', 'test/fixtures/memory/compound-provider.ts', '--out', out]);
    expect(run.stdout).toMatch(/holdout_direct_recall\s+0\.000\s+at least 0\.95\s+FAIL/);
    expect(run.stdout).toMatch(/development_direct_recall\s+0\.000\s+at least 0\.95\s+FAIL/);
    expect(run.stdout).toContain('gates FAIL');
    expect(run.code).toBe(1);
    const bundle = EvidenceBundle.parse(JSON.parse(readFileSync(out, 'utf8')));
    expect(bundle.provider).toBe('test-compound/1');
    expect(bundle.passed).toBe(false);
    // Every compound was refused by the verifier, not silently dropped.
    expect(bundle.repeats.every((r) => r.development.refused > 0 && r.holdout.refused > 0)).toBe(true);
  });

  it('refuses bad usage with exit code 2 and the usage text', async () => {
    const run = await evaluate(['--provider', 'oracle']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('unknown provider oracle');
    expect(run.stderr).toContain('usage: npm run memory:evaluate');
  });
});
