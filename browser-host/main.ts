/**
 * CLI entry: `npx tsx browser-host/main.ts [--headless]` (or `npm run host`), configured by the
 * environment (see config.ts). Prints exactly one line, `browser-host listening on ws://...`, when
 * ready; on SIGINT or SIGTERM closes every browser, stops Xvfb and exits 0. Invalid configuration
 * or a failed start: a message on stderr and exit code 1.
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
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    host.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`browser-host: error while stopping: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} catch (error) {
  process.stderr.write(`browser-host could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
