import { callTraits, type ToolInvocation } from '../../shared/tools.ts';

/** A hardline denial: the rule id and why. */
export interface HardlineDenial {
  readonly rule: string;
  readonly reason: string;
}

/**
 * Hardline rules (DESIGN.md section 5): they run first and nothing overrides them. Navigation only
 * to http(s) URLs without embedded credentials: no `file:`, `chrome:`, `javascript:`, `data:`,
 * `about:` or other scheme, so the host's own files and the browser's internal pages stay out of
 * reach. (Raw protocol passthrough does not exist as a tool at all.)
 * @returns the denial, or undefined when no hardline rule applies.
 */
export function hardlineDenial(invocation: ToolInvocation): HardlineDenial | undefined {
  const target = callTraits(invocation).targetUrl;
  if (target === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(target.trim());
  } catch {
    return { rule: 'hardline.url', reason: 'the URL does not parse' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { rule: 'hardline.scheme', reason: `navigation to ${url.protocol} URLs is never allowed` };
  }
  if (url.username !== '' || url.password !== '') {
    return { rule: 'hardline.credentials', reason: 'URLs carrying credentials are never allowed' };
  }
  return undefined;
}
