import type { ProposeBody } from '../../shared/api.ts';
import { Observation } from '../../shared/observation.ts';
import { withinOrigins } from '../../shared/origin.ts';
import { CURRENT_TOOL_VERSION } from '../../shared/tools.ts';
import { latestResolvedSignIn } from '../sign-in/protected-page.ts';
import type { DriveContext, FreshRead } from './drive-context.ts';

/**
 * A fresh read for step `index` (ADR-0164 part 5: each step from a fresh observation): an
 * observation, or, when the browser shows no page of the recipe's origin (a new lease after a
 * sign-in, a restarted host), a navigation to the page the sign-in protected or to the recipe's
 * start page; both are ordinary calls counted against the 64.
 * @returns the observation and its call, or why the drive stops (`parked` at a sign-in wall,
 *   `ended` when the site's page cannot be had, `later` while the host is away or busy).
 */
export async function freshRead(drive: DriveContext, index: number): Promise<FreshRead> {
  const { run, recipe } = drive;
  const onOrigin = run.latestRevision !== null && run.latestUrl !== null && withinOrigins(run.latestUrl, [recipe.origin]);
  const navigate = async (): Promise<ProposeBody> => ({
    tool: 'browser.navigate',
    version: CURRENT_TOOL_VERSION,
    arguments: { url: await navigationTarget(drive) },
  });
  let navigated = !onOrigin;
  let call = await drive.proposeRead(index, onOrigin ? { tool: 'browser.observe', version: CURRENT_TOOL_VERSION, arguments: {} } : await navigate());
  for (;;) {
    await drive.load();
    if (drive.run.state === 'waiting_for_authentication') {
      await drive.event(index, 'waiting_for_sign_in', `Step ${index + 1}: the page asks for sign-in; the run waits for the owner and resumes from this step.`, {
        toolCallId: call.id,
      });
      return { stop: 'parked' };
    }
    const observation = call.state === 'succeeded' ? Observation.safeParse(call.result) : undefined;
    if (observation?.success) {
      const { url, revision } = observation.data;
      await drive.event(index, 'observed', `${call.tool === 'browser.navigate' ? 'Opened' : 'Read'} ${url} (revision ${revision}).`, {
        toolCallId: call.id,
        evidence: { url, revision, tool: call.tool },
      });
      return { observation: observation.data, callId: call.id };
    }
    const code = call.errorCode;
    await drive.event(index, 'observed', `The read failed: ${code ?? call.state}${call.errorMessage ? `: ${call.errorMessage}` : ''}`, {
      toolCallId: call.id,
      evidence: { code, state: call.state, tool: call.tool },
    });
    if (!navigated && (code === 'page_changed' || code === 'outside_run_origins' || code === 'lease_lost')) {
      // The browser shows no page of the recipe's (a restarted host, a page that went elsewhere).
      navigated = true;
      call = await drive.proposeRead(index, await navigate());
      continue;
    }
    // The site's own page cannot be had (a redirect away, a load that failed): the run stops
    // with that evidence instead of trying again until its deadline.
    if (code === 'outside_run_origins' || code === 'policy_denied' || (call.tool === 'browser.navigate' && code === 'navigation_failed')) {
      return { stop: await drive.end('partial', `step ${index + 1} could not read a page of ${recipe.origin} (${code})`) };
    }
    // The host is away or busy: the next drive reads again (every read counts against the 64 calls).
    return { stop: 'later' };
  }
}

/**
 * Where a read goes when the browser shows no page of the recipe's origin: the page the run's
 * latest resolved sign-in protected (a resumption; ADR-0164 part 3), when it is on the recipe's
 * origin; else the recipe's start page. The first navigation after a resolved sign-in records
 * the resumption.
 */
async function navigationTarget(drive: DriveContext): Promise<string> {
  const resolved = await latestResolvedSignIn(drive.ports, drive.runId);
  const start = `${drive.recipe.origin}${drive.recipe.start_path}`;
  if (!resolved) return start;
  if (drive.progress.resumedWaitId !== resolved.waitId) {
    await drive.save({ resumedWaitId: resolved.waitId });
    await drive.event(null, 'resumed', `Resumed at step ${drive.progress.nextStep + 1} after the owner's verified sign-in, with a fresh lease and read.`, {
      evidence: { wait_id: resolved.waitId, protected_url: resolved.protectedUrl, step: drive.progress.nextStep },
    });
  }
  return withinOrigins(resolved.protectedUrl, [drive.recipe.origin]) ? resolved.protectedUrl : start;
}
