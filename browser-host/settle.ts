import { performance } from 'node:perf_hooks';
import type { Page } from 'playwright-core';
import type { SettleReport } from '../shared/observation.ts';
import type { SettleConfig } from './config.ts';
import type { Deadline } from './deadline.ts';
import { isolatedWorldOf } from './page/isolated-world.ts';
import type { PageTraffic, RequestSnapshot } from './page/traffic.ts';

/**
 * The moment settling starts (ADR-0159): just before a navigation or an action is dispatched, so
 * `elapsed_ms` counts from here and the requests the dispatch starts join the request set.
 *
 * Entry is a moment, but the set it opens closes only when settling has seen the current document
 * ready: a request an action's handler starts synchronously (a click that fetches) is reported
 * before the page answers settling's first question, and a navigation's document starts its own
 * scripts and startup fetches before it is ready, so both are in the set. Requests started once
 * the document is ready (polling, timers) never join it.
 */
export interface SettleEntry {
  /** `performance.now()` at entry, in ms. */
  readonly startedAt: number;
  readonly requests: RequestSnapshot;
}

/**
 * Opens settling for the page whose traffic is `traffic`: notes the time and opens the request
 * set (the tracked requests in flight now, plus those started until settling has seen the
 * document ready, at most `config.maxTrackedRequests`). Call just before dispatching; always pass
 * the entry to {@link settle} or dispose its `requests`.
 */
export function enterSettling(traffic: PageTraffic, config: SettleConfig): SettleEntry {
  return { startedAt: performance.now(), requests: traffic.open(config.maxTrackedRequests) };
}

/** In the isolated world: the document's readiness right now. */
const READY_STATE = `() => document.readyState`;

/** In the isolated world: resolves true once `document.readyState` is past `loading`, false after `maxMs`. */
const WAIT_FOR_READINESS = `(maxMs) => new Promise((resolve) => {
  if (document.readyState !== 'loading') { resolve(true); return; }
  const timer = setTimeout(() => resolve(false), maxMs);
  document.addEventListener('readystatechange', () => {
    if (document.readyState !== 'loading') { clearTimeout(timer); resolve(true); }
  });
})`;

/**
 * In the isolated world: once the document is ready, resolves true after `quietMs` without any DOM mutation
 * (subtree, child list, attributes, character data), or false when `maxMs` pass first.
 */
const WAIT_FOR_DOM_QUIET = `({ quietMs, maxMs }) => new Promise((resolve) => {
  const start = performance.now();
  const watch = () => {
    let last = performance.now();
    const observer = new MutationObserver(() => { last = performance.now(); });
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const check = () => {
      const now = performance.now();
      if (now - last >= quietMs) { observer.disconnect(); resolve(true); }
      else if (now - start >= maxMs) { observer.disconnect(); resolve(false); }
      else setTimeout(check, Math.max(1, Math.min(quietMs - (now - last), maxMs - (now - start))));
    };
    setTimeout(check, Math.max(0, Math.min(quietMs, maxMs - (performance.now() - start))));
  };
  if (document.readyState !== 'loading') { watch(); return; }
  const onChange = () => {
    if (document.readyState === 'loading') return;
    document.removeEventListener('readystatechange', onChange);
    watch();
  };
  document.addEventListener('readystatechange', onChange);
})`;

/**
 * Settles the page after a navigation or a dispatched action, per ADR-0159: within
 * `config.budgetMs` from entry (2,000 ms by default, and never past `deadline`),
 * 1. wait for document readiness (`interactive` or `complete`; not the load event, so slow
 *    images never hold it back); from then on no request joins the set (see {@link SettleEntry});
 * 2. wait until every request of the set has finished, failed or (event streams) received its
 *    headers;
 * 3. wait for `config.quietMs` (300 ms) without DOM mutation.
 * A new main-frame document during settling clears the request set and restarts at step 1 for
 * that document inside the same budget. Background activity need not stop.
 *
 * Never throws for the page's behaviour: returns `{outcome, elapsed_ms, pending_at_entry,
 * overflow, expired_by?}` (shared/observation.ts `SettleReport`): `dom_quiet`, or
 * `bound_expired` with `expired_by: 'deadline'` when the budget ran out first, or
 * `expired_by: 'overflow'` when more than `config.maxTrackedRequests` (256) requests would have
 * joined the set (steps 1 and 3 still run so the capture sees a calmer page). `elapsed_ms` counts
 * from entry, in whole ms; `pending_at_entry` is how many requests joined the set of the document
 * settling ended on. Neither outcome means a task completed. Disposes the entry.
 */
export async function settle(deadline: Deadline, page: Page, traffic: PageTraffic, entry: SettleEntry, config: SettleConfig): Promise<SettleReport> {
  const budget = deadline.child(config.budgetMs - (performance.now() - entry.startedAt));
  try {
    const quiet = await settleWithin(budget, page, traffic, entry, config);
    const overflow = entry.requests.overflow;
    const report: SettleReport = {
      outcome: quiet && !overflow ? 'dom_quiet' : 'bound_expired',
      elapsed_ms: Math.max(0, Math.round(performance.now() - entry.startedAt)),
      pending_at_entry: entry.requests.pendingAtEntry,
      overflow,
    };
    if (report.outcome === 'bound_expired') report.expired_by = overflow ? 'overflow' : 'deadline';
    return report;
  } finally {
    budget.dispose();
    entry.requests.dispose();
  }
}

/** True when all three conditions held before the budget ran out. */
async function settleWithin(budget: Deadline, page: Page, traffic: PageTraffic, entry: SettleEntry, config: SettleConfig): Promise<boolean> {
  while (!budget.expired) {
    const documentsBefore = traffic.documents;
    try {
      const state = await inPage<string>(budget, page, READY_STATE, null);
      if (state === 'loading' && !(await inPage<boolean>(budget, page, WAIT_FOR_READINESS, budget.remainingMs()))) return false;
      if (traffic.documents !== documentsBefore) continue;
      // The document is ready. What the dispatch started was reported before the page answered
      // (same renderer, in order), and so was what the document started while it loaded; from
      // here on nothing joins, so polling never extends the set. A new document reopens it.
      entry.requests.close();
      if (!entry.requests.overflow) await budget.race(entry.requests.drained());
      if (traffic.documents !== documentsBefore) continue;
      const quiet = await inPage<boolean>(budget, page, WAIT_FOR_DOM_QUIET, {
        quietMs: config.quietMs,
        maxMs: budget.remainingMs(),
      });
      if (traffic.documents !== documentsBefore) continue;
      return quiet;
    } catch {
      if (budget.expired) return false;
      // The document went away under an evaluation; wait for its successor (or the budget)
      // rather than spinning on a page that keeps failing.
      if (traffic.documents === documentsBefore) await traffic.nextDocument(budget.signal);
    }
  }
  return false;
}

/**
 * Runs one of the fixed functions above in the host's isolated world of the page, never in the
 * page's own: a page that replaces `MutationObserver`, `performance`, `Promise`, timers or array
 * methods, or shadows `document.readyState`, cannot make settling report quiet early. The
 * functions are strings so no bundler helper leaks into the page.
 */
function inPage<T>(budget: Deadline, page: Page, fn: string, arg: unknown): Promise<T> {
  return isolatedWorldOf(page).evaluate<T>(budget, `(${fn})(${JSON.stringify(arg)})`);
}
