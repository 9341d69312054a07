import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { prepareFreshLocalD1, queryLocalD1 } from '../../../scripts/local-edge.ts';
import { root } from '../../../scripts/local-processes.ts';
import { readDevVars } from '../../../scripts/setup.mjs';

// Every end-to-end stack on Workers starts on a D1 of its own. Applying 23 migrations with
// wrangler took about 9 s a stack; a migrated, seeded template is now made once and copied. These
// tests hold that each copy is still a complete database of its own, by the real wrangler.

const scratch = mkdtempSync(join(tmpdir(), 'fresh-local-d1-'));
const templates = join(scratch, 'templates');
const vars = readDevVars();
/** Other tokens: another database. */
const otherVars = { ...vars, AGENT_TOKEN: `${vars.AGENT_TOKEN}-other` };
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The migrations drizzle/ holds: every `NNNN_name.sql`. */
const migrationCount = readdirSync(join(root, 'drizzle')).filter((name) => /^\d{4}_.*\.sql$/.test(name)).length;

describe('a fresh local D1 for each stack', () => {
  it('is migrated and seeded with the local principals, and a write to one copy is not seen by another', async () => {
    const first = join(scratch, 'first');
    const second = join(scratch, 'second');
    prepareFreshLocalD1(vars, first, templates);
    prepareFreshLocalD1(vars, second, templates);
    for (const persistTo of [first, second]) {
      const [migrations, principals] = await queryLocalD1(['SELECT count(*) AS n FROM d1_migrations', 'SELECT id FROM principals ORDER BY id'], persistTo);
      expect(migrations).toEqual([{ n: migrationCount }]);
      expect(principals?.map((row) => row.id)).toEqual(['prn_local_agent', 'prn_local_operator', 'prn_local_owner']);
    }
    await queryLocalD1(["DELETE FROM principals WHERE id = 'prn_local_operator'"], first);
    const [inFirst] = await queryLocalD1(['SELECT count(*) AS n FROM principals'], first);
    const [inSecond] = await queryLocalD1(['SELECT count(*) AS n FROM principals'], second);
    expect(inFirst).toEqual([{ n: 2 }]);
    expect(inSecond).toEqual([{ n: 3 }]);
    // A copy made after the write is the template's, not the written one's.
    const third = join(scratch, 'third');
    prepareFreshLocalD1(vars, third, templates);
    const [inThird] = await queryLocalD1(['SELECT count(*) AS n FROM principals'], third);
    expect(inThird).toEqual([{ n: 3 }]);
  });

  it('is copied from the one template of the current migrations and tokens, which replaces a template of others', () => {
    prepareFreshLocalD1(vars, join(scratch, 'warm'), templates);
    const [current] = readdirSync(templates);
    expect(readdirSync(templates)).toEqual([current]);
    // A file put into the template reaches the next copy: nothing is built again.
    writeFileSync(join(templates, current!, 'marker'), 'from the template');
    prepareFreshLocalD1(vars, join(scratch, 'copied'), templates);
    expect(existsSync(join(scratch, 'copied', 'marker'))).toBe(true);
    // Other tokens are another database: a template of its own, and the old one goes.
    mkdirSync(join(templates, 'stale'), { recursive: true });
    prepareFreshLocalD1(otherVars, join(scratch, 'other'), templates);
    const left = readdirSync(templates);
    expect(left).toHaveLength(1);
    expect(left[0]).not.toBe(current);
    expect(existsSync(join(scratch, 'other', 'marker'))).toBe(false);
  });

  it('builds again a template that is not whole (emptied, or cut short while being replaced) instead of copying it', async () => {
    const ownTemplates = join(scratch, 'not-whole');
    // The template the test before left (of other tokens), made here when run alone.
    prepareFreshLocalD1(otherVars, join(scratch, 'before-emptied'), templates);
    const [key] = readdirSync(templates);
    // What is left when the template was emptied by hand, or removed while it was being copied.
    mkdirSync(join(ownTemplates, key!, 'v3'), { recursive: true });
    const afterwards = join(scratch, 'after-emptied');
    prepareFreshLocalD1(otherVars, afterwards, ownTemplates);
    const [migrations] = await queryLocalD1(['SELECT count(*) AS n FROM d1_migrations'], afterwards);
    expect(migrations).toEqual([{ n: migrationCount }]);
    expect(readdirSync(ownTemplates)).toEqual([key]);
  });

  it('removes the half-built directory a killed build left behind, and keeps one a live process is still building', () => {
    const ownTemplates = join(scratch, 'after-a-killed-build');
    // A build stopped by Ctrl-C or SIGKILL never reaches its clean-up: its directory stays.
    const deadPid = spawnSync(process.execPath, ['-e', '']).pid;
    const killed = `${'0'.repeat(64)}.building-${deadPid}`;
    const live = `${'1'.repeat(64)}.building-${process.ppid}`;
    for (const entry of [killed, live]) mkdirSync(join(ownTemplates, entry, 'v3'), { recursive: true });
    prepareFreshLocalD1(vars, join(scratch, 'after-killed'), ownTemplates);
    const left = readdirSync(ownTemplates);
    expect(left).not.toContain(killed);
    expect(left).toContain(live);
    expect(left).toHaveLength(2);
  });
});
