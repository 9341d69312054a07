/**
 * CLI entry: `node --import tsx browser-host/main.ts [--headless]` (or `npm run host`), configured
 * by the environment (see config.ts). Not through the `tsx` command: it relays SIGTERM to its
 * child and kills the child when it has not answered within about 60 ms, so a busy host would
 * not drain. Prints exactly one line, `browser-host listening on ws://...`, when ready.
 * SIGTERM drains first (issue 32: nothing new is admitted, live leases and ceremonies finish,
 * every profile is snapshotted; at most `HOST_DRAIN_TIMEOUT_MS`), then closes every browser,
 * stops Xvfb and exits 0; SIGINT, or another SIGTERM at least {@link REPEATED_SIGNAL_MS} after
 * the first, closes at once. Invalid configuration or a failed start: a message on stderr and
 * exit code 1.
 */
import { ConfigError, type HostConfig, parseHostConfig } from './config.ts';
import { startBrowserHost } from './host.ts';

/**
 * A SIGTERM this soon after the first, in ms, is the same stop delivered again, not a second
 * request: a service manager signals the whole process group, and the launcher in front of the
 * host (npm, scripts/toolchain.mjs) relays its own copy within milliseconds.
 */
const REPEATED_SIGNAL_MS = 1_000;

let config: HostConfig;
try {
  config = parseHostConfig(process.env, process.argv.slice(2));
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`);
  process.exit(1);
}

try {
  const host = await startBrowserHost(config);
  process.stdout.write(`browser-host listening on ${host.url}\n`);
  let closing = false;
  let drainingSince: number | undefined;
  const close = (): void => {
    if (closing) return;
    closing = true;
    host.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`browser-host: error while stopping: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  const drainThenClose = (): void => {
    if (drainingSince !== undefined) {
      if (performance.now() - drainingSince >= REPEATED_SIGNAL_MS) close();
      return;
    }
    drainingSince = performance.now();
    process.stderr.write(`browser-host: draining (at most ${config.drainTimeoutMs} ms) before stopping\n`);
    void host.untilDrained(config.drainTimeoutMs).then((drained) => {
      if (!drained) process.stderr.write(`browser-host: not drained within ${config.drainTimeoutMs} ms; stopping anyway\n`);
      close();
    });
  };
  process.on('SIGINT', close);
  process.on('SIGTERM', drainThenClose);
} catch (error) {
  process.stderr.write(`browser-host could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
