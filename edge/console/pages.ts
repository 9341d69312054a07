import { html } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { ActTarget } from '../../shared/act-target.ts';

/** What a page of the console renders to (hono/html: every interpolation is escaped). */
export type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/**
 * Where the console's style sheet and scripts are served (`edge/console/assets/`, copied into
 * `public/` by scripts/setup.mjs and served as static files on every runtime).
 */
export const CONSOLE_ASSETS_PATH = '/console/assets';

/**
 * The Content-Security-Policy of every console page: only the console's own files may style or
 * script it (no inline script, style or event handler), pictures come from the console or, for
 * the live view's frames, `data:` URLs; it fetches and opens its socket only to itself, posts
 * forms only to itself, and no other site may frame it.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'";

/** The frame of every console page: title, header with sign-out when signed in, and `body`. */
export function layout(title: string, body: Page, signedIn?: { csrfToken: string }): Page {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Owner console</title>
<link rel="stylesheet" href="${CONSOLE_ASSETS_PATH}/console.css">
<script src="${CONSOLE_ASSETS_PATH}/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<h1>Owner console</h1>
${
  signedIn
    ? html`<form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="${signedIn.csrfToken}"><button type="submit">Sign out</button></form>`
    : ''
}
</header>
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** The sign-in page: the owner pastes their token once; `error` says why the last try failed. */
export function signInPage(error?: string): Page {
  return layout(
    'Sign in',
    html`<h2>Sign in</h2>
<p>Paste your owner token once; the console keeps you signed in for 8 hours on this browser.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/console/sign-in">
<label for="token">Owner token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<p><button type="submit" class="approve">Sign in</button></p>
</form>`,
  );
}

/** What a one-time sign-in link opens: a button that uses it (a same-site post). */
export function linkPage(token: string): Page {
  return layout(
    'Sign in',
    html`<h2>Sign in</h2>
<p>This one-time link signs you in to the owner console on this browser.</p>
<form method="post" action="/console/link/${token}">
<p><button type="submit" class="approve">Sign in to the console</button></p>
</form>`,
  );
}

/** One pending approval as the owner judges it. Times are epoch ms. */
export interface InboxItem {
  readonly approvalId: string;
  readonly summary: string;
  readonly tool: string;
  readonly target: ActTarget | null;
  /** The act's action kind (`click`, `type`, ...), for the grant shortcut; undefined for other tools. */
  readonly action: string | undefined;
  readonly runIntent: string;
  readonly rule: string | undefined;
  readonly askedAt: number;
  readonly runDeadlineAt: number;
  /** The page when the call parked, with the target's box, once the host's picture has arrived. */
  readonly picture: Picture | undefined;
}

/** A screenshot the console shows (`/console/screenshots/<id>`): its size in px and, when known, the target's box on it. */
export interface Picture {
  readonly id: string;
  readonly width: number;
  readonly height: number;
  readonly box: { readonly x: number; readonly y: number; readonly width: number; readonly height: number } | null;
}

/**
 * The page as it was when the call parked, the target outlined: an SVG over the image whose
 * view box is the picture's own pixels, so the outline stays on the element at any display size.
 */
function parkedPicture(picture: Picture | undefined, target: ActTarget | null): Page {
  if (picture === undefined) return html`<p class="empty">No picture of the page yet.</p>`;
  const box = picture.box;
  const located = box !== null && box.width > 0 && box.height > 0;
  const visible = located && box.x < picture.width && box.y < picture.height && box.x + box.width > 0 && box.y + box.height > 0;
  const what = target ? `the ${target.role} ${JSON.stringify(target.name)}` : 'the target';
  return html`<figure class="shot">
<div class="frame"><img src="/console/screenshots/${picture.id}" width="${picture.width}" height="${picture.height}" alt="The page when the call was proposed${target ? html`, ${target.page_title}` : ''}">${
    visible
      ? html`<svg viewBox="0 0 ${picture.width} ${picture.height}" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="target-outline" x="${box.x}" y="${box.y}" width="${box.width}" height="${box.height}"></rect></svg>`
      : ''
  }</div>
<figcaption>${
    visible
      ? html`The page when the call was proposed; ${what} is outlined in orange.`
      : target && located
        ? html`The page when the call was proposed; ${what} is not in the visible part of the page.`
        : target
          ? html`The page when the call was proposed; ${what} could not be found on it (it may be hidden, or the page changed).`
          : 'The page when the call was proposed.'
  }</figcaption>
</figure>`;
}

/** "the textbox \"First name\"", with its frame when not the page's (a drag's destination, a form's field). */
function elementWords(element: { role: string; name: string; frame_origin: string }, pageUrl: string): Page {
  const frame = element.frame_origin !== originOfUrl(pageUrl) ? html` inside a frame of ${element.frame_origin}` : '';
  return html`the ${element.role} ${JSON.stringify(element.name)}${frame}`;
}

/** A duration for people: `40 s`, `3 min`, `2 h 5 min`. */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** The list of pending approvals (also what `/console/inbox` answers for the refresh). */
export function inboxList(items: readonly InboxItem[], csrfToken: string, now: number): Page {
  if (items.length === 0) return html`<p class="empty">Nothing is waiting for you.</p>`;
  return html`${items.map(
    (item) => html`<article class="approval" aria-labelledby="title-${item.approvalId}">
<h3 id="title-${item.approvalId}">${item.summary}</h3>
<dl>
<dt>Run</dt><dd>${item.runIntent}</dd>
${
  item.target
    ? html`<dt>Target</dt><dd>the ${item.target.role} ${JSON.stringify(item.target.name)}${
        item.target.frame_origin !== originOfUrl(item.target.page_url) ? html` inside a frame of ${item.target.frame_origin}` : ''
      }</dd>
<dt>Page</dt><dd>${item.target.page_title} (${item.target.page_url})</dd>
${item.target.text !== undefined ? html`<dt>Text to type</dt><dd>${item.target.text}</dd>` : ''}
${item.target.option !== undefined ? html`<dt>Option</dt><dd>${item.target.option}</dd>` : ''}
${item.target.key !== undefined ? html`<dt>Key</dt><dd>${item.target.key}</dd>` : ''}
${item.target.destination ? html`<dt>Onto</dt><dd>${elementWords(item.target.destination, item.target.page_url)}</dd>` : ''}
${
  item.target.fields
    ? html`<dt>Fields</dt><dd><ol>${item.target.fields.map(
        (field) =>
          html`<li>${elementWords(field, item.target!.page_url)}: ${typeof field.value === 'boolean' ? (field.value ? 'checked' : 'unchecked') : (field.value ?? '')}</li>`,
      )}</ol></dd>`
    : ''
}
${item.target.submit ? html`<dt>Then click</dt><dd>${elementWords(item.target.submit, item.target.page_url)}</dd>` : ''}`
    : html`<dt>Tool</dt><dd>${item.tool}</dd>`
}
<dt>Asked by rule</dt><dd>${item.rule ?? 'the policy'}</dd>
<dt>Waiting</dt><dd>${humanDuration(now - item.askedAt)}</dd>
<dt>Run has left</dt><dd>${humanDuration(item.runDeadlineAt - now)}</dd>
</dl>
${parkedPicture(item.picture, item.target)}
<form method="post" action="/console/approvals/${item.approvalId}/decision" class="actions">
<input type="hidden" name="csrf" value="${csrfToken}">
<button type="submit" name="decision" value="approve" class="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="deny">Deny</button>
</form>
${
  item.target && item.action
    ? html`<details>
<summary>Approve and allow the same again</summary>
<form method="post" action="/console/approvals/${item.approvalId}/decision">
<input type="hidden" name="csrf" value="${csrfToken}">
<input type="hidden" name="decision" value="approve_and_allow">
<p id="scope-${item.approvalId}">Approves this call, and lets the agent ${item.action} on pages of ${item.target.frame_origin} without asking, for the uses and minutes below, under the policy in force now.</p>
<label for="uses-${item.approvalId}">Uses</label>
<input id="uses-${item.approvalId}" name="uses" type="number" min="1" max="50" value="5" required aria-describedby="scope-${item.approvalId}">
<label for="minutes-${item.approvalId}">Minutes</label>
<input id="minutes-${item.approvalId}" name="minutes" type="number" min="1" max="240" value="30" required>
<p><button type="submit" class="approve">Approve and allow</button></p>
</form>
</details>`
    : ''
}
</article>`,
  )}`;
}

/** The inbox page: every pending approval across the owner's runs, newest first. */
export function inboxPage(items: readonly InboxItem[], csrfToken: string, now: number, notice?: string): Page {
  return layout(
    'Inbox',
    html`<h2>Waiting for you</h2>
${notice ? html`<p role="status">${notice}</p>` : ''}
${sections('/console')}
<div id="inbox" aria-live="polite">${inboxList(items, csrfToken, now)}</div>`,
    { csrfToken },
  );
}

function originOfUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/** A run as the runs list shows it. Times are epoch ms. */
export interface RunListItem {
  readonly id: string;
  readonly intent: string;
  readonly state: string;
  readonly createdAt: number;
  readonly deadlineAt: number;
}

/** The owner's runs, newest first. */
export function runsPage(items: readonly RunListItem[], csrfToken: string, now: number): Page {
  return layout(
    'Runs',
    html`${sections('/console/runs')}
<h2>Runs</h2>
${
  items.length === 0
    ? html`<p class="empty">No runs yet.</p>`
    : html`<table>
<caption class="skip">Your runs, newest first</caption>
<thead><tr><th scope="col">Intent</th><th scope="col">State</th><th scope="col">Started</th></tr></thead>
<tbody>${items.map(
        (run) =>
          html`<tr><td><a href="/console/runs/${run.id}">${run.intent}</a></td><td>${run.state.replaceAll('_', ' ')}</td><td>${humanDuration(now - run.createdAt)} ago</td></tr>`,
      )}</tbody>
</table>`
}`,
    { csrfToken },
  );
}

/** One entry of a run's timeline: when (epoch ms), what, and its details as label and value pairs. */
export interface TimelineEntry {
  readonly at: number;
  readonly what: string;
  readonly details: ReadonlyArray<readonly [string, string]>;
  /** The page after the call's act or navigation, when a picture was kept. */
  readonly thumbnail?: Picture;
}

/** A run's page: its files and downloads (`files`, issue 33) and its timeline: its calls with their decision, approval, watermark, dispatch, settle and outcome; sign-in waits; notices; the report. */
export function runPage(
  run: RunListItem & { readonly report: string | null; readonly recipe?: string | null; readonly placement?: string | null },
  entries: readonly TimelineEntry[],
  csrfToken: string,
  files?: Page,
): Page {
  return layout(
    run.intent,
    html`${sections('/console/runs')}
<h2>${run.intent}</h2>
<p>State: ${run.state.replaceAll('_', ' ')}${run.report ? html` · report: ${run.report}` : ''}</p>
${run.recipe ? html`<p>Carried out by the reviewed recipe ${run.recipe}, one ordinary call at a time; its steps are in the timeline.</p>` : ''}
${run.placement ? html`<p>Browser: ${run.placement}</p>` : ''}
${files ?? ''}
<ol class="timeline">${entries.map(
      (entry) => html`<li class="approval"><h3>${entry.what}</h3><p>${new Date(entry.at).toISOString()}</p>
<dl>${entry.details.map(([label, value]) => html`<dt>${label}</dt><dd>${value}</dd>`)}</dl>${
        entry.thumbnail
          ? html`<a href="/console/screenshots/${entry.thumbnail.id}"><img class="thumbnail" src="/console/screenshots/${entry.thumbnail.id}" width="${entry.thumbnail.width}" height="${entry.thumbnail.height}" loading="lazy" alt="The page after this call (opens the full picture)"></a>`
          : ''
      }</li>`,
    )}</ol>`,
    { csrfToken },
  );
}

/** One thing a console list shows: a title, label and value pairs, and an action the API allows on it. */
export interface ListedThing {
  readonly title: string;
  readonly details: ReadonlyArray<readonly [string, string]>;
  /** Posts to `path` with the session's CSRF token, each a button labelled `label`. */
  readonly actions?: ReadonlyArray<{ readonly path: string; readonly label: string }>;
}

/** The console's sections, for every page's navigation. */
const SECTIONS = [
  ['/console', 'Inbox'],
  ['/console/runs', 'Runs'],
  ['/console/grants', 'Grants'],
  ['/console/sign-ins', 'Sign-ins'],
  ['/console/profiles', 'Profiles'],
  ['/console/recipes', 'Recipes'],
  ['/console/memories', 'Memories'],
] as const;

/** The navigation between the console's sections, `current` marked for assistive technology. */
export function sections(current: string): Page {
  return html`<nav aria-label="Console">${SECTIONS.map(
    ([path, label], index) => html`${index > 0 ? ' · ' : ''}<a href="${path}"${path === current ? html` aria-current="page"` : ''}>${label}</a>`,
  )}</nav>`;
}

/** A page of one section: a heading, an optional notice and the things it lists. */
export function listPage(path: string, title: string, things: readonly ListedThing[], csrfToken: string, empty: string, notice?: string): Page {
  return layout(
    title,
    html`${sections(path)}
<h2>${title}</h2>
${notice ? html`<p role="status">${notice}</p>` : ''}
${
  things.length === 0
    ? html`<p class="empty">${empty}</p>`
    : things.map(
        (thing) => html`<article class="approval"><h3>${thing.title}</h3>
<dl>${thing.details.map(([label, value]) => html`<dt>${label}</dt><dd>${value}</dd>`)}</dl>
${
  (thing.actions ?? []).length > 0
    ? html`<div class="actions">${(thing.actions ?? []).map(
        (action) =>
          html`<form method="post" action="${action.path}"><input type="hidden" name="csrf" value="${csrfToken}"><button type="submit">${action.label}</button></form>`,
      )}</div>`
    : ''
}</article>`,
      )
}`,
    { csrfToken },
  );
}

/**
 * The live view of a sign-in window (issue 16): the frames of the ceremony's page, a focusable
 * keyboard target, a status line that says what is going on, and a button that ends the view.
 * The socket (`/console/live/<token>/socket`) uses the link once.
 */
export function liveViewPage(token: string, origin: string, csrfToken: string): Page {
  return layout(
    'Live view',
    html`${sections('/console/sign-ins')}
<h2>Sign in to ${origin}</h2>
<p>This is the browser window of your profile, live. Sign in as you always do; the host checks the sign-in and the run goes on by itself. Only this sign-in page is shown, and nothing you type is stored.</p>
<p id="live-status" role="status">Connecting to the sign-in window...</p>
<p id="live-notice" class="error" role="alert" hidden></p>
<div id="live-view" class="live-view" data-state="connecting" data-socket="/console/live/${token}/socket">
<img id="live-frame" alt="The sign-in window of your profile, live">
<label class="skip" for="live-keys">Keyboard input to the sign-in window</label>
<textarea id="live-keys" class="live-keys" autocomplete="off" autocapitalize="off" spellcheck="false"></textarea>
</div>
<p><button type="button" id="live-close">Close the live view</button></p>
<script src="${CONSOLE_ASSETS_PATH}/live-view.js" defer></script>`,
    { csrfToken },
  );
}
