import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ended, hasEnded, type Started, signalGroup, startProcess, stopProcess, waitFor } from './local-processes.ts';
import { startTcpRelay, type TcpRelay } from './tcp-relay.ts';

/**
 * Where a host of the local stack runs when not on this machine's loopback: a network namespace
 * of its own (test/support/host-network.ts makes one), with an address the host binds and the
 * edge dials, and a link that can be cut.
 */
export interface HostNetwork {
  /** The namespace's name (`ip netns exec <name> ...` runs a command in it). */
  readonly name: string;
  /** The host's address in its namespace: its HOST_BIND, and where the edge dials it. */
  readonly address: string;
  /** What runs a command inside the namespace, put before the host's command line (e.g. `ip netns exec <name>`). */
  readonly command: readonly string[];
  /** Takes the namespace's link down: packets are dropped both ways; processes and open connections stay. */
  cut(): Promise<void>;
  /** Brings the link up again. */
  restore(): Promise<void>;
  /** Removes the namespace and what bridges it; after the host has stopped. */
  close(): Promise<void>;
}

/** How a {@link LocalHost} ended: its exit code, or the signal that ended it. */
export interface HostExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One browser host process of a local stack (scripts/local-stack.ts), `host-1` ... `host-N`. */
export interface LocalHost {
  /** Its HOST_ID: `host-1`, `host-2`, ... */
  readonly id: string;
  /** The ws:// URL the edge dials for it (through its relay with `hostRelay`; at its namespace's address with a network). */
  readonly url: string;
  /** The port the host listens on, the same across restarts. */
  readonly port: number;
  /** Its own data directory (a temp dir of the stack's): `profiles/` in it is its HOST_PROFILES_DIR. */
  readonly dataDir: string;
  /** Its HOST_PROFILES_DIR, kept across restarts. */
  readonly profilesDir: string;
  /** Process id of the running host (the leader of its process group); undefined while it is not running. */
  readonly pid: number | undefined;
  /** True from its start until its process has ended. */
  readonly running: boolean;
  /** The network namespace it runs in, when it has one of its own ({@link cut} then takes the link down); undefined: this machine's loopback. */
  readonly namespace: string | undefined;
  /**
   * Sends `signal` (default SIGKILL) while it runs; no-op otherwise. SIGKILL, SIGSTOP and SIGCONT
   * go to its whole process group (a crash or a freeze takes its Chromiums and Xvfb along);
   * any other signal to the host's own process only, as Kubernetes sends SIGTERM to a container's
   * main process (SIGTERM: the host drains, then exits). Resolves once sent; for SIGKILL once it
   * has exited.
   */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /**
   * Resolves with how the running (or last) process ended, once it has.
   * @throws Error when it has not ended within `timeoutMs` (default 60 s), or never started.
   */
  exited(timeoutMs?: number): Promise<HostExit>;
  /**
   * Starts it again after it ended, with the same id, port, secret, profiles directory and
   * network; resolves when it listens (its browsers are new: nothing of the old pages survives).
   * @throws Error when it is still running, or does not listen within 90 s.
   */
  start(): Promise<void>;
  /**
   * Cuts it off: in its own namespace the link goes down (it and its browsers go on; packets both
   * ways are dropped, so open connections fall silent); on loopback its process group is frozen
   * (SIGSTOP: the kernel still accepts connections, nobody answers). Idempotent.
   */
  cut(): Promise<void>;
  /** Undoes {@link cut}: the link comes up, or the group continues (SIGCONT). Idempotent. */
  restore(): Promise<void>;
  /** Its last lines of output since it last started (at most 400, oldest first). */
  output(): string[];
}

/** What a stack needs of its host beyond {@link LocalHost}: stopping it for good and its relay. */
export interface ManagedHost extends LocalHost {
  /** Stops it for good (process group, SIGINT: no drain; SIGKILL after 8 s), then its relay and network. */
  stop(): Promise<void>;
  /** With a relay, destroys every connection open through it; returns how many. Else 0. */
  cutConnections(): number;
}

/** How the stack starts one host. */
export interface LocalHostOptions {
  readonly id: string;
  readonly port: number;
  readonly dataDir: string;
  /** Environment of the host process (the stack's environment, HOST_SHARED_SECRET, HOST_EDGE_URL, the test's vars). */
  readonly env: NodeJS.ProcessEnv;
  readonly headless: boolean;
  /** Prefix of its echoed lines (`host` when it is the only one, else its id); undefined: not echoed. */
  readonly echoAs: string | undefined;
  /** Put a cuttable loopback relay in front of it (LocalStackOptions.hostRelay). */
  readonly relay: boolean;
  readonly network: HostNetwork | undefined;
}

/**
 * Starts one browser host (`node --import tsx browser-host/main.ts`, inside its network's
 * namespace when it has one) and resolves when it listens.
 * @throws Error (after stopping what it started) when it does not listen within 90 s.
 */
export async function startLocalHost(options: LocalHostOptions): Promise<ManagedHost> {
  const profilesDir = join(options.dataDir, 'profiles');
  mkdirSync(profilesDir, { recursive: true });
  const { network } = options;
  let current: Started | undefined;
  let relay: TcpRelay | undefined;

  const launch = async () => {
    if (current && !hasEnded(current.child)) throw new Error(`${options.id} is still running`);
    const [command, ...prefix] = [...(network?.command ?? []), process.execPath];
    const args = [...prefix, '--import', 'tsx', 'browser-host/main.ts', ...(options.headless ? ['--headless'] : [])];
    const env = {
      ...options.env,
      HOST_ID: options.id,
      HOST_PORT: String(options.port),
      HOST_PROFILES_DIR: profilesDir,
      ...(network ? { HOST_BIND: network.address } : {}),
    };
    const started = startProcess(options.echoAs ?? options.id, command!, args, env, options.echoAs !== undefined);
    current = started;
    await waitFor(`the browser host ${options.id}`, started, () => started.output.some((line) => line.includes('browser-host listening on')), 90_000);
  };

  const running = () => current !== undefined && !hasEnded(current.child);
  const host: ManagedHost = {
    id: options.id,
    get url() {
      return `ws://${relay ? '127.0.0.1' : (network?.address ?? '127.0.0.1')}:${relay?.port ?? options.port}`;
    },
    port: options.port,
    dataDir: options.dataDir,
    profilesDir,
    get pid() {
      return running() ? current?.child.pid : undefined;
    },
    get running() {
      return running();
    },
    namespace: network?.name,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!current || !running()) return;
      const { child } = current;
      if (signal === 'SIGKILL' || signal === 'SIGSTOP' || signal === 'SIGCONT') {
        signalGroup(child.pid, signal);
        if (signal === 'SIGKILL') await ended(child);
        return;
      }
      child.kill(signal);
    },
    async exited(timeoutMs = 60_000) {
      const child = current?.child;
      if (!child) throw new Error(`${options.id} never started`);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${options.id} did not exit within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        await Promise.race([ended(child), timeout]);
      } finally {
        clearTimeout(timer);
      }
      return { code: child.exitCode, signal: child.signalCode };
    },
    start: launch,
    async cut() {
      if (network) return network.cut();
      if (current && running()) signalGroup(current.child.pid, 'SIGSTOP');
    },
    async restore() {
      if (network) return network.restore();
      if (current && running()) signalGroup(current.child.pid, 'SIGCONT');
    },
    output: () => [...(current?.output ?? [])],
    async stop() {
      // The stack goes away as a whole: SIGINT closes at once, where SIGTERM would drain first.
      if (current) await stopProcess(current, 'SIGINT');
      await relay?.close();
      await network?.close();
    },
    cutConnections: () => relay?.cut() ?? 0,
  };

  try {
    await launch();
    if (options.relay) relay = await startTcpRelay(options.port, { targetHost: network?.address ?? '127.0.0.1' });
    return host;
  } catch (error) {
    await host.stop();
    throw error;
  }
}
