/**
 * The browser host's health probe in its container (deploy/host/Dockerfile's HEALTHCHECK, the
 * StatefulSet's readiness and liveness probes in deploy/kubernetes/): `node
 * browser-host/hello-probe.ts` opens a WebSocket to the host on loopback, as the edge does (a
 * fresh nonce, no Origin), and exits 0 once the host's hello frame arrives, 1 when none arrives
 * within `HOST_PROBE_TIMEOUT_MS` (default 5,000 ms) or the connection is refused or closed first.
 * Port: `HOST_PORT` (default 8790), the one the host listens on.
 *
 * Why not a TCP probe: the kernel accepts a connection on a listening port even while the host's
 * event loop is stuck (or the process is stopped); the hello is signed by the host itself, so its
 * arrival proves the host answers. Runs on plain Node 22 (its type stripping), without tsx: the
 * image has production dependencies only.
 */
import WebSocket from 'ws';
import { HelloFrame } from '../shared/protocol.ts';
import { newWireNonce, withWireNonce } from '../shared/wire-auth.ts';

/** Default of `HOST_PROBE_TIMEOUT_MS`, in ms: well under the probes' `timeoutSeconds` (10). */
export const DEFAULT_PROBE_TIMEOUT_MS = 5_000;

/**
 * Whether the host at `url` (`ws://127.0.0.1:<port>`) sends a well-formed hello frame within
 * `timeoutMs`; resolves false (never rejects) on refusal, close, timeout or any other frame.
 */
export function probeHello(url: string, timeoutMs: number): Promise<{ ok: true; hostId: string } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(withWireNonce(url, newWireNonce()), { handshakeTimeout: timeoutMs });
    const finish = (result: { ok: true; hostId: string } | { ok: false; why: string }) => {
      clearTimeout(timer);
      socket.removeAllListeners();
      socket.on('error', () => {}); // a late error after terminate() must not crash the probe
      socket.terminate();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ ok: false, why: `no hello within ${timeoutMs} ms` }), timeoutMs);
    socket.once('error', (error) => finish({ ok: false, why: error.message }));
    socket.once('close', (code) => finish({ ok: false, why: `closed (${code}) before the hello` }));
    socket.once('message', (data) => {
      let parsed: ReturnType<typeof HelloFrame.safeParse> | undefined;
      try {
        parsed = HelloFrame.safeParse(JSON.parse(String(data)));
      } catch {
        parsed = undefined;
      }
      finish(parsed?.success ? { ok: true, hostId: parsed.data.params.host_id } : { ok: false, why: 'the first frame is not a hello' });
    });
  });
}

if (import.meta.main) {
  const port = Number(process.env.HOST_PORT ?? 8790);
  const timeoutMs = Number(process.env.HOST_PROBE_TIMEOUT_MS ?? DEFAULT_PROBE_TIMEOUT_MS);
  const result = await probeHello(`ws://127.0.0.1:${port}`, timeoutMs);
  if (result.ok) {
    process.stdout.write(`browser-host ${result.hostId} answered on port ${port}\n`);
    process.exit(0);
  }
  process.stderr.write(`browser-host on port ${port} did not answer: ${result.why}\n`);
  process.exit(1);
}
