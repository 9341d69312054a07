import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * Whether a page may reach `address` (an IPv4 or IPv6 literal in any form the parser knows:
 * dotted, decimal, octal, hex, IPv4-mapped IPv6) on the strength of being a public address:
 * only global unicast is. Loopback, private (RFC 1918, unique-local), link-local (the cloud
 * metadata service, 169.254.169.254), carrier-grade NAT, unspecified, broadcast, multicast,
 * reserved and the IPv6 ranges that embed IPv4 (NAT64, 6to4, Teredo) are not. Anything that does
 * not parse is not. An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // IPv4-compatible (::a.b.c.d, deprecated) embeds an IPv4 address too.
    else if (v6.parts.slice(0, 6).every((part) => part === 0)) return false;
  }
  return parsed.range() === 'unicast';
}

/** Whether `address` is link-local (IPv4 169.254/16, the cloud metadata service; IPv6 fe80::/10). */
export function isLinkLocalAddress(address: string): boolean {
  try {
    let parsed = ipaddr.parse(address.replace(/^\[|\]$/g, ''));
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    return parsed.range() === 'linkLocal';
  } catch {
    return false;
  }
}

/** Whether `hostname` is an IP literal (bracketed IPv6 included) rather than a DNS name. */
export function isAddressLiteral(hostname: string): boolean {
  return ipaddr.isValid(hostname.replace(/^\[|\]$/g, ''));
}

/** The address a connection is pinned to, its family (4 or 6), and whether every answer was public. */
export interface PinnedAddress {
  readonly address: string;
  readonly family: 4 | 6;
  readonly public: boolean;
}

/** Why a host name was refused: it resolves (or is) a forbidden address, or does not resolve. */
export type Refusal = 'forbidden_address' | 'unresolvable';

/**
 * Resolves `hostname` once for a connection and checks every address it resolves to: the answer
 * is the address to connect to (the resolution is pinned: the connection uses exactly this
 * address, so a second, rebinding answer never reaches the socket), or a refusal when any of the
 * addresses is not public (see {@link isPublicAddress}) and `mayBePrivate` is false, or when the
 * name does not resolve. A literal is checked as it is, with no lookup.
 */
export async function resolveChecked(hostname: string, mayBePrivate: boolean): Promise<PinnedAddress | Refusal> {
  const bare = hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  if (ipaddr.isValid(bare)) addresses = [{ address: ipaddr.parse(bare).toString(), family: ipaddr.parse(bare).kind() === 'ipv6' ? 6 : 4 }];
  else {
    try {
      addresses = await lookup(bare, { all: true, verbatim: true });
    } catch {
      return 'unresolvable';
    }
  }
  const first = addresses[0];
  if (first === undefined) return 'unresolvable';
  const allPublic = addresses.every((entry) => isPublicAddress(entry.address));
  if (!mayBePrivate && !allPublic) return 'forbidden_address';
  return { address: first.address, family: first.family === 6 ? 6 : 4, public: allPublic };
}
