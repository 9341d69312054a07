/**
 * CLI entry: `node --import tsx browser-host/main.ts [--headless]` (or `npm run host`), configured
 * by the environment (see config.ts). Not through the `tsx` command: it relays SIGTERM to its child
 * and kills it when the child has not answered within 30 ms, so a busy host would not drain. Prints exactly one line, `browser-host listening on ws://...`, when
 * ready. SIGTERM drains first (issue 32: nothing new is admitted, live leases and ceremonies
 * finish, every profile is snapshotted; at most `HOST_DRAIN_TIMEOUT_MS`), then closes every
 * browser, stops Xvfb and exits 0; SIGINT, or a second signal while draining, closes at once.
 * Invalid configuration or a failed start: a message on stderr and exit code 1.
 */
import { ConfigError, type HostConfig, parseHostConfig } from './config.ts';
import { startBrowserHost } from './host.ts';

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
  let draining = false;
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
    if (draining) {
      close();
      return;
    }
    draining = true;
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
