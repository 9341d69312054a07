/**
 * CLI: `npm run host:drain` (`node browser-host/drain/drain-command.ts`), what a Kubernetes preStop
 * hook runs inside the host's container before the pod is stopped (issue 32). Configured by the
 * host's own environment (config.ts): it connects to the host on this machine over the normal
 * authenticated wire (`ws://<HOST_BIND>:<HOST_PORT>`, loopback when the host binds every address,
 * `HOST_SHARED_SECRET`), calls `host.drain`, and asks again every second until the host answers
 * `drained`, at most `HOST_DRAIN_TIMEOUT_MS`. It prints one line per change of progress.
 *
 * Exit codes: 0 drained; 1 not drained in time (SIGTERM then drains what is left and closes);
 * 2 invalid configuration or no host to reach. Give the pod a `terminationGracePeriodSeconds`
 * above the drain timeout, so SIGTERM finds the host drained.
 */
import { ConfigError, type HostConfig, parseHostConfig } from '../config.ts';
import { Deadline } from '../deadline.ts';
import { HostWireClient } from './wire-client.ts';

/** Spacing of the `host.drain` calls while the host drains, in ms. */
const POLL_MS = 1_000;
/** Longest connecting, and each call, may take, in ms. */
const CALL_MS = 10_000;

let config: HostConfig;
try {
  config = parseHostConfig(process.env);
} catch (error) {
  process.stderr.write(`host:drain: ${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(2);
}

const address = config.bind === '0.0.0.0' || config.bind === '::' ? '127.0.0.1' : config.bind;
const url = `ws://${address.includes(':') ? `[${address}]` : address}:${config.port}`;
const whole = Deadline.after(config.drainTimeoutMs);
let client: HostWireClient;
try {
  client = await HostWireClient.connect(whole.child(CALL_MS), url, config.sharedSecret);
} catch (error) {
  process.stderr.write(`host:drain: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
}

let said = '';
let drained = false;
try {
  for (;;) {
    const progress = await client.call(whole.child(CALL_MS), 'host.drain', {});
    const line = progress.drained
      ? `host:drain: ${url} is drained`
      : `host:drain: ${url} is draining: ${progress.leases} leases live, ${progress.snapshots_pending} snapshots being written`;
    if (line !== said) process.stdout.write(`${line}\n`);
    said = line;
    drained = progress.drained;
    if (drained || whole.expired) break;
    if (!(await Deadline.pause(Math.min(POLL_MS, whole.remainingMs()), whole.signal))) break;
  }
} catch (error) {
  process.stderr.write(`host:drain: ${error instanceof Error ? error.message : String(error)}\n`);
} finally {
  client.close();
  whole.dispose();
}
if (!drained) process.stderr.write(`host:drain: ${url} was not drained within ${config.drainTimeoutMs} ms\n`);
process.exit(drained ? 0 : 1);
