import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { BASE_CHROMIUM_ARGS } from '../../browser-host/profiles.ts';
import { type ApiClient, observationOf } from '../../scripts/api-client.ts';
import { refOf } from '../../scripts/aria-refs.ts';
import { LOCAL_OWNER_ID } from '../../scripts/local-stack.ts';
import { seriousViolations } from '../support/accessibility.ts';
import { type Stacked, stackTestPerRuntime } from '../support/stack-fixture.ts';

// The owner's console as an owner uses it: a second Chromium (playwright-core) drives the real
// console page served by the real edge (wrangler dev) while the real host parks and runs the
// agent's calls. Accessibility is checked with axe-core in the same Chromium.

const RUNTIMES = ['workers', 'node'] as const;
const consoleTest = stackTestPerRuntime(RUNTIMES, { headless: true });

describe.each(RUNTIMES)("the owner's console in a browser, on the %s edge", (runtime) => {
  const it = consoleTest(runtime);
  let browserProfile: string;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    browserProfile = mkdtempSync(join(tmpdir(), 'console-owner-'));
    context = await chromium.launchPersistentContext(browserProfile, {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      headless: true,
      args: [...BASE_CHROMIUM_ARGS],
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    if (browserProfile) rmSync(browserProfile, { recursive: true, force: true });
  });

  /** A one-time sign-in link for the stack's owner, issued with the operator token. */
  async function signInLink(operator: ApiClient): Promise<string> {
    return (await operator.consoleLink(LOCAL_OWNER_ID)).url;
  }

  /** A run on the fixture site with a click on "Save draft" parked for the owner. */
  async function parkedClick({ site, agent, owner }: Pick<Stacked, 'site' | 'agent' | 'owner'>, intent: string) {
    const run = await owner.createRun({ profile_id: 'console-e2e', intent, origins: [site.origin] });
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('postconditions/toast.html') }, '1.4.0')).body);
    const proposal = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: opened.revision, reference: refOf(opened.snapshot, 'button', 'Save draft') },
      '1.4.0',
    );
    expect(proposal.status).toBe(202);
    return { run, call: proposal.body };
  }

  it('an agent token cannot sign in, and the page says so', async ({ stack }) => {
    await page.goto(`${stack.edgeUrl}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Owner token').fill(stack.tokens.agent);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain("Only an owner's token opens the console");
  });

  it('signs in with the link, shows the parked click in words, and approves it with the keyboard alone', async ({ stack, site, agent, owner, operator }) => {
    const { run, call } = await parkedClick({ site, agent, owner }, 'Save the draft from the console');
    // The link as an owner meets it: clicked on another site (a mail, a chat), so the visit to
    // the console starts cross-site; the link's page then signs in with a same-site post.
    const link = await signInLink(operator);
    await page.goto(site.url('postconditions/toast.html'));
    await page.evaluate((href) => {
      const anchor = Object.assign(document.createElement('a'), { href, textContent: 'Open the console' });
      document.body.appendChild(anchor);
    }, link);
    await page.getByRole('link', { name: 'Open the console' }).click();
    await page.waitForURL(link);
    await page.getByRole('button', { name: 'Sign in to the console' }).click();
    await page.waitForURL(`${stack.edgeUrl}/console`);
    const entry = page.getByRole('article').filter({ hasText: 'Save the draft from the console' });
    await expect.poll(() => entry.count()).toBe(1);
    expect(await entry.textContent()).toContain('Click the button "Save draft"');
    expect(await entry.textContent()).toContain(site.url('postconditions/toast.html'));
    expect(await seriousViolations(page)).toEqual([]);
    // Keyboard only: Tab until the Approve button of this entry has focus, then Enter.
    const approve = entry.getByRole('button', { name: 'Approve', exact: true });
    for (let presses = 0; presses < 40 && !(await approve.evaluate((button) => button === document.activeElement)); presses++) await page.keyboard.press('Tab');
    expect(await approve.evaluate((button) => button === document.activeElement)).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Approved: the call succeeded.');
    expect((await agent.toolCall(call.id)).state).toBe('succeeded');
    // The run's timeline shows the call with its approval and settle.
    await page.goto(`${stack.edgeUrl}/console/runs/${run.id}`);
    const timeline = (await page.locator('main').textContent()) ?? '';
    expect(timeline).toContain('Click the button "Save draft"');
    expect(timeline).toContain('approved at');
    expect(timeline).toContain('Settle');
    expect(await seriousViolations(page)).toEqual([]);
    await agent.report(run.id, 'completed', 'saved');
  });

  it("shows the parked page with the target outlined where the element is, and the page after each call in the run's timeline", async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    // Signed in by the test before. The fixture's button is solid red at 240,180 (200 x 80 CSS px) and turns green when clicked.
    const run = await owner.createRun({ profile_id: 'console-e2e', intent: 'Pay the invoice from the console', origins: [site.origin] });
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('screenshot/target.html') }, '1.4.0')).body);
    const proposal = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: opened.revision, reference: refOf(opened.snapshot, 'button', 'Send payment') },
      '1.4.0',
    );
    expect(proposal.status).toBe(202);
    await page.goto(`${stack.edgeUrl}/console`);
    const entry = page.getByRole('article').filter({ hasText: 'Pay the invoice from the console' });
    // The picture arrives in the background; the inbox refreshes itself every 3 s.
    await expect.poll(() => entry.locator('figure.shot img').count(), { timeout: 20_000 }).toBe(1);
    expect(await entry.locator('figcaption').textContent()).toContain('the button "Send payment" is outlined');
    const seen = await entry.evaluate(async (article) => {
      const image = article.querySelector('figure.shot img') as HTMLImageElement;
      const rect = article.querySelector('figure.shot rect') as SVGRectElement;
      const svg = article.querySelector('figure.shot svg') as SVGSVGElement;
      if (!image.complete) await new Promise((resolve) => image.addEventListener('load', resolve, { once: true }));
      const canvas = Object.assign(document.createElement('canvas'), { width: image.naturalWidth, height: image.naturalHeight });
      const drawing = canvas.getContext('2d')!;
      drawing.drawImage(image, 0, 0);
      const box = { x: rect.x.baseVal.value, y: rect.y.baseVal.value, width: rect.width.baseVal.value, height: rect.height.baseVal.value };
      const pixel = (x: number, y: number) => [...drawing.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3)];
      const shown = image.getBoundingClientRect();
      const over = svg.getBoundingClientRect();
      return {
        natural: [image.naturalWidth, image.naturalHeight],
        box,
        inside: pixel(box.x + box.width / 2, box.y + box.height / 2),
        left: pixel(box.x - 20, box.y + box.height / 2),
        below: pixel(box.x + box.width / 2, box.y + box.height + 20),
        overlay: [Math.abs(shown.left - over.left), Math.abs(shown.top - over.top), Math.abs(shown.width - over.width), Math.abs(shown.height - over.height)],
      };
    });
    expect(seen.natural).toEqual([1280, 720]);
    for (const [key, value] of Object.entries({ x: 240, y: 180, width: 200, height: 80 })) expect(Math.abs(seen.box[key as 'x'] - value)).toBeLessThan(1);
    const isRed = ([r, g, b]: number[]) => r! > 170 && g! < 90 && b! < 90;
    expect(isRed(seen.inside)).toBe(true);
    expect(isRed(seen.left)).toBe(false);
    expect(isRed(seen.below)).toBe(false);
    // The outline is drawn over the picture as shown, at any size: the overlay covers the image exactly.
    for (const difference of seen.overlay) expect(difference).toBeLessThan(1.5);
    await entry.getByRole('button', { name: 'Approve', exact: true }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Approved: the call succeeded.');
    // The timeline: a thumbnail after the navigation (red button) and after the click (green).
    const colours = async () => {
      await page.goto(`${stack.edgeUrl}/console/runs/${run.id}`);
      return page.locator('img.thumbnail').evaluateAll(async (images) =>
        Promise.all(
          (images as HTMLImageElement[]).map(async (image) => {
            if (!image.complete) await new Promise((resolve) => image.addEventListener('load', resolve, { once: true }));
            const canvas = Object.assign(document.createElement('canvas'), { width: image.naturalWidth, height: image.naturalHeight });
            const drawing = canvas.getContext('2d')!;
            drawing.drawImage(image, 0, 0);
            const [r, g, b] = drawing.getImageData(340, 220, 1, 1).data;
            return r! > 170 && g! < 90 ? 'red' : g! > 120 && r! < 90 ? 'green' : `rgb(${r},${g},${b})`;
          }),
        ),
      );
    };
    await expect.poll(colours, { timeout: 20_000 }).toEqual(['red', 'green']);
    expect(await seriousViolations(page)).toEqual([]);
    await agent.report(run.id, 'completed', 'paid');
  });

  it('serves every page under a strict Content-Security-Policy, and shows markup from a page as text without running it', async ({
    stack,
    site,
    agent,
    owner,
  }) => {
    const HOSTILE = '<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script><style>body{display:none}</style>';
    const run = await owner.createRun({ profile_id: 'console-e2e', intent: 'Press the button named in markup', origins: [site.origin] });
    const opened = observationOf((await agent.propose(run.id, 'browser.navigate', { url: site.url('console/hostile-names.html') }, '1.4.0')).body);
    const proposal = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: opened.revision, reference: refOf(opened.snapshot, 'button', HOSTILE) },
      '1.4.0',
    );
    expect(proposal.status).toBe(202);
    // Every violation the console's pages report, from before their own scripts run.
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { __violations: string[] }).__violations = seen;
      document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI}`));
    });
    const response = await page.goto(`${stack.edgeUrl}/console`);
    const headers = response?.headers() ?? {};
    expect(headers['content-security-policy']).toBe(
      "default-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'",
    );
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    const entry = page.getByRole('article').filter({ hasText: 'Press the button named in markup' });
    await expect.poll(() => entry.count()).toBe(1);
    // The name is shown as the words it is; nothing of it became an element or ran.
    expect(await entry.textContent()).toContain(HOSTILE);
    const effects = await page.evaluate(() => ({
      pwned: (window as unknown as { __pwned?: unknown }).__pwned ?? null,
      injected: document.querySelectorAll('main img[src="x"], main script, main style').length,
      visible: getComputedStyle(document.body).display,
      violations: (window as unknown as { __violations: string[] }).__violations,
    }));
    expect(effects).toEqual({ pwned: null, injected: 0, visible: 'block', violations: [] });
    // The console's own style sheet and script still apply under the policy: styled, and the inbox refreshes itself.
    expect(await page.locator('header').evaluate((header) => getComputedStyle(header).display)).toBe('flex');
    await owner.decide(proposal.body.approval_id!, 'deny');
    await expect.poll(() => entry.count(), { timeout: 10_000 }).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
    await page.goto(`${stack.edgeUrl}/console/runs/${run.id}`);
    expect(await page.locator('main').textContent()).toContain(HOSTILE);
    expect(await page.evaluate(() => (window as unknown as { __violations: string[] }).__violations)).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
    await agent.report(run.id, 'failed', 'denied by the owner').catch(() => undefined);
  });

  it("denying from the console ends the agent's call denied", async ({ stack, site, agent, owner }) => {
    const { run, call } = await parkedClick({ site, agent, owner }, 'Deny this from the console');
    await page.goto(`${stack.edgeUrl}/console`);
    const entry = page.getByRole('article').filter({ hasText: 'Deny this from the console' });
    await entry.getByRole('button', { name: 'Deny', exact: true }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Denied: the agent was told.');
    const ended = await agent.toolCall(call.id);
    expect(ended.state).toBe('denied');
    expect(ended.error?.code).toBe('policy_denied');
    await agent.report(run.id, 'failed', 'denied by the owner');
  });

  it('"approve and allow" shows its scope, and the grant covers the next identical act without asking', async ({ stack, site, agent, owner }) => {
    const { run, call } = await parkedClick({ site, agent, owner }, 'Allow the same from the console');
    await page.goto(`${stack.edgeUrl}/console`);
    const entry = page.getByRole('article').filter({ hasText: 'Allow the same from the console' });
    await entry.getByText('Approve and allow the same again').click();
    expect(await entry.locator('p[id^="scope-"]').textContent()).toContain(`lets the agent click on pages of ${site.origin} without asking`);
    await entry.getByLabel('Uses').fill('2');
    await entry.getByLabel('Minutes').fill('10');
    await entry.getByRole('button', { name: 'Approve and allow' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain(`Allowed: click on ${site.origin} for 2 uses within 10 minutes.`);
    expect((await agent.toolCall(call.id)).state).toBe('succeeded');
    const fresh = observationOf((await agent.propose(run.id, 'browser.observe', {}, '1.4.0')).body);
    const next = await agent.propose(
      run.id,
      'browser.act',
      { action: 'click', revision: fresh.revision, reference: refOf(fresh.snapshot, 'button', 'Save draft') },
      '1.4.0',
    );
    expect(next.status).toBe(200);
    expect(next.body.state).toBe('succeeded');
    expect(next.body.phases.decision?.grant_id).toMatch(/^grt_/);
    await agent.report(run.id, 'completed', 'saved twice');
    // Revoked from the Grants page, the next act asks the owner again.
    await page.goto(`${stack.edgeUrl}/console/grants`);
    await page
      .getByRole('article')
      .filter({ hasText: `click on ${site.origin}` })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Revoked');
  });

  it('a form posted from another origin is refused and the approval stays pending', async ({ stack, site, agent, owner }) => {
    const { run, call } = await parkedClick({ site, agent, owner }, 'A cross-origin post must not decide');
    await page.goto(site.url('postconditions/toast.html'));
    const status = await page.evaluate(
      async ({ edge, approval }) => {
        const response = await fetch(`${edge}/console/approvals/${approval}/decision`, {
          method: 'POST',
          credentials: 'include',
          mode: 'no-cors',
          body: new URLSearchParams({ decision: 'approve' }),
        });
        return response.type;
      },
      { edge: stack.edgeUrl, approval: call.approval_id! },
    );
    expect(status).toBe('opaque');
    const pending = (await owner.pendingApprovals()).find((approval) => approval.id === call.approval_id);
    expect(pending?.state).toBe('pending');
    await owner.decide(call.approval_id!, 'deny');
    await agent.report(run.id, 'failed', 'denied').catch(() => undefined);
  });

  it('an expired session is refused: the console sends the owner to sign in again', async ({ stack }) => {
    await page.goto(`${stack.edgeUrl}/console`);
    expect(new URL(page.url()).pathname).toBe('/console');
    // The session's eight hours, passed: its expiry moved into the past in the edge's own database.
    await stack.queryD1('UPDATE console_sessions SET expires_at = 1');
    await page.goto(`${stack.edgeUrl}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    const refresh = await page.evaluate(async () => (await fetch('/console/inbox', { credentials: 'same-origin' })).status);
    expect(refresh).toBe(401);
  });
});
