import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from '../../../scripts/local-processes.ts';

// scripts/toolchain.mjs, the launcher in front of every npm script: it ends as its command did,
// so npm, a shell or a service manager reads the same status with or without it.

/** Runs `sh -c script` through the launcher; how the launcher ended and what it wrote to stderr. */
function launch(script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'toolchain.mjs'), 'sh', '-c', script], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })));
}

describe('the toolchain launcher (scripts/toolchain.mjs)', () => {
  it("exits with its command's exit code", async () => {
    expect(await launch('exit 7')).toMatchObject({ code: 7, signal: null });
  });

  it.each(['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGKILL'] as const)('ends by %s when its command was ended by it', async (signal) => {
    expect(await launch(`kill -${signal.slice(3)} $$`)).toMatchObject({ code: null, signal });
  });

  it('exits 141, not 0, when its command was ended by SIGPIPE (a signal Node ignores)', async () => {
    expect(await launch('kill -PIPE $$')).toMatchObject({ code: 141, signal: null });
  });

  it("exits 138 when its command was ended by SIGUSR1, without starting Node's inspector", async () => {
    const ended = await launch('kill -USR1 $$');
    expect(ended).toMatchObject({ code: 138, signal: null });
    expect(ended.stderr).not.toContain('Debugger listening');
  });
});
