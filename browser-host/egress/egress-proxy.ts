import type { LookupAddress, LookupOptions } from 'node:dns';
import { RequestError, Server } from 'proxy-chain';
import type { Confinement } from './confinement.ts';

/** A running egress proxy for one browser. */
export interface EgressProxy {
  /** `http://127.0.0.1:<port>`, what Chromium is told to send everything through. */
  readonly url: string;
  /** Stops listening and drops open tunnels. Idempotent; never throws. */
  close(): Promise<void>;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * Starts the local HTTP proxy one profile's Chromium sends every request through
 * (`--proxy-server`, loopback included), on 127.0.0.1 and any free port. It is the address half
 * of the confinement (README "Confinement"): every connection, plain HTTP or a CONNECT tunnel
 * (HTTPS, WebSockets), is checked by {@link Confinement.connection} on the address its host name
 * resolves to, and then made to exactly that address (the resolution is pinned), so a DNS answer
 * that changes between the check and the connection cannot reach a forbidden address. A refused
 * connection answers 403 before any byte goes out and is recorded as a blocked `subresource`
 * (a tunnel's scheme is read off its port: 443 https, else http); a name that does not resolve
 * answers 502 and is not recorded (it would have failed anyway; Chromium's own background
 * look-ups end there too).
 * @throws Error when it cannot listen.
 */
export async function startEgressProxy(confinement: Confinement): Promise<EgressProxy> {
  const server = new Server({
    port: 0,
    host: '127.0.0.1',
    verbose: false,
    prepareRequestFunction: async ({ hostname, port, isHttp, request }) => {
      const verdict = await confinement.connection(hostname, port, isHttp);
      if (verdict.refused === 'unresolvable') {
        confinement.unreached(connectionOrigin(hostname, port, isHttp ? request.url : undefined));
        throw new RequestError('the host name does not resolve', 502);
      }
      if (verdict.refused !== undefined) {
        confinement.refuse({
          origin: connectionOrigin(hostname, port, isHttp ? request.url : undefined),
          kind: 'subresource',
          reason: verdict.refused,
        });
        throw new RequestError(`blocked by the browser host's egress confinement: ${verdict.refused}`, 403);
      }
      const pinned = verdict.pinned;
      const dnsLookup = (_host: string, options: LookupOptions | LookupCallback, callback?: LookupCallback): void => {
        const done = (typeof options === 'function' ? options : callback) as LookupCallback;
        const all = typeof options === 'object' && options.all === true;
        if (all) done(null, [{ address: pinned.address, family: pinned.family }]);
        else done(null, pinned.address, pinned.family);
      };
      return { dnsLookup: dnsLookup as never };
    },
  });
  // A refused or failed request is answered to Chromium; nothing to log here.
  server.on('requestFailed', () => {});
  await server.listen();
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${server.port}`,
    close: () => (closing ??= server.close(true).catch(() => {})),
  };
}

/** The origin a blocked connection was for: from the request URL for plain HTTP, else the tunnel's host and port. */
function connectionOrigin(hostname: string, port: number, requestUrl: string | undefined): string {
  if (requestUrl !== undefined) {
    try {
      return new URL(requestUrl).origin;
    } catch {
      // fall through to the host and port
    }
  }
  // A tunnel (HTTPS, WebSocket) does not say its scheme: 443 reads as https, anything else as http.
  const host = hostname.includes(':') && !hostname.startsWith('[') ? `[${hostname}]` : hostname;
  if (port === 443) return `https://${host}`;
  return port === 80 ? `http://${host}` : `http://${host}:${port}`;
}
