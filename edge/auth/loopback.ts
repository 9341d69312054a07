/**
 * Whether a URL hostname names this machine's loopback interface: `localhost`, any name under
 * `.localhost` (RFC 6761 reserves them for loopback), `127.0.0.1` or `[::1]`. The one loopback rule
 * of the edge: the MCP endpoint's Host check and the console cookie's `Secure` flag both use it.
 * @param hostname a `URL.hostname` (IPv6 in brackets, as URL gives it), compared case-insensitively.
 */
export function isLoopbackHostname(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'localhost' || host.endsWith('.localhost') || host === '127.0.0.1' || host === '[::1]';
}
