import { execFile, execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { promisify } from 'node:util';
import { type Started, signalGroup, startProcess, stopProcess, waitFor } from '../../scripts/local-processes.ts';
import type { HostNetwork, LocalStackOptions } from '../../scripts/local-stack.ts';
import { startTcpRelay, type TcpRelay } from '../../scripts/tcp-relay.ts';

/**
 * Browser hosts in network namespaces of their own, for end-to-end tests that cut one host off
 * from the edge (issue 32: "network namespaces where a test needs to cut one off").
 *
 * Each namespace gets a veth pair on a /30 of 198.18.0.0/15 (RFC 2544's benchmarking range, used
 * by nothing here): this machine's end is `.1`, the host's `.2`; the host binds only that address
 * and the edge dials it there. The namespace has no other route: the host and its Chromiums reach
 * only the loopback ports the stack bridges in (the edge's, for HOST_EDGE_URL, and the sites'),
 * at the same 127.0.0.1 URLs as on this machine: a relay inside the namespace forwards each to this
 * machine's end of the veth, where a relay forwards it to this machine's loopback. The edge and the
 * sites keep listening on loopback only.
 *
 * {@link HostNetwork.cut} takes the namespace's end of the link down: its routes stay on this
 * machine's side (marked linkdown) and both ends' neighbours are fixed, so packets to the host are
 * silently dropped at the veth (no ARP failure, no refusal) rather than sent anywhere else, and a blackhole route of lower priority for the /30 keeps it so even after
 * the namespace is gone. The host and its browsers go on; connections open through the link fall
 * silent and carry on after {@link HostNetwork.restore} if neither side gave up meanwhile.
 *
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and `ip` (iproute2); see {@link namespacesAvailable}.
 */

const execFileAsync = promisify(execFile);
let sequence = 0;
let available: Promise<boolean> | undefined;

async function ip(...args: string[]): Promise<string> {
  return (await execFileAsync('ip', args)).stdout;
}

/** Whether this process may make network namespaces (tried once: a namespace is added and deleted). */
export function namespacesAvailable(): Promise<boolean> {
  available ??= (async () => {
    const name = `gb-${process.pid}-probe`;
    try {
      await ip('netns', 'add', name);
      await ip('netns', 'del', name);
      return true;
    } catch {
      return false;
    }
  })();
  return available;
}

/** A /30 of 198.18.0.0/15 that no route of this machine covers yet; its base address's last two octets. */
async function freeBlock(): Promise<string> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const block = randomInt(0, 32_768) * 4;
    const base = `198.${18 + (block >> 16)}.${(block >> 8) & 255}.${block & 255}`;
    if ((await ip('-4', 'route', 'show', 'match', `${base}/30`)).split('\n').every((line) => !line.includes('198.1'))) return base;
  }
  throw new Error('no free /30 in 198.18.0.0/15');
}

/** The MAC address of `device` (in the namespace `-n <name>` names, when given). */
async function macOf(namespace: readonly string[], device: string): Promise<string> {
  const [link] = JSON.parse(await ip(...namespace, '-j', 'link', 'show', device)) as Array<{ address?: string }>;
  if (!link?.address) throw new Error(`no MAC address for ${device}`);
  return link.address;
}

/** The address `offset` after `base` (within its /30). */
const plus = (base: string, offset: number) => base.replace(/\d+$/, (last) => String(Number(last) + offset));

/**
 * Makes a network namespace for host `id` with a veth link to this machine and bridges
 * `loopbackPorts` of this machine's loopback into it (same ports on the namespace's loopback).
 * @throws Error (after removing what it made) when a step fails, e.g. without root.
 */
export async function startHostNamespace(id: string, loopbackPorts: readonly number[]): Promise<HostNetwork> {
  const seq = ++sequence;
  const name = `gb-${process.pid}-${id}`;
  const veth = `gb${process.pid}v${seq}`;
  const base = await freeBlock();
  const gateway = plus(base, 1);
  const address = plus(base, 2);
  const relays: TcpRelay[] = [];
  let inside: Started | undefined;
  let closed = false;
  const removeNamespace = () => {
    try {
      execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
    } catch {
      // not made, or gone
    }
  };
  // A test process that dies without stopping its stack leaves no namespace behind.
  const onExit = () => {
    signalGroup(inside?.child.pid, 'SIGKILL');
    removeNamespace();
  };
  process.once('exit', onExit);
  const close = async () => {
    if (closed) return;
    closed = true;
    process.removeListener('exit', onExit);
    if (inside) await stopProcess(inside);
    await Promise.all(relays.map((relay) => relay.close()));
    removeNamespace(); // takes the veth pair with it
    await ip('route', 'del', 'blackhole', `${base}/30`, 'metric', '4000').catch(() => {});
  };
  try {
    await ip('netns', 'add', name);
    await ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', name);
    await ip('addr', 'add', `${gateway}/30`, 'dev', veth);
    await ip('link', 'set', veth, 'up');
    await ip('route', 'add', 'blackhole', `${base}/30`, 'metric', '4000');
    await ip('-n', name, 'addr', 'add', `${address}/30`, 'dev', 'eth0');
    await ip('-n', name, 'link', 'set', 'eth0', 'up');
    await ip('-n', name, 'link', 'set', 'lo', 'up');
    // Fixed neighbours on both ends: a cut then only drops packets, as a partition does, instead
    // of ARP failing after a few seconds and refusing connections (EHOSTUNREACH) even after the
    // link is back.
    await ip('neigh', 'replace', address, 'lladdr', await macOf(['-n', name], 'eth0'), 'dev', veth, 'nud', 'permanent');
    await ip('-n', name, 'neigh', 'replace', gateway, 'lladdr', await macOf([], veth), 'dev', 'eth0', 'nud', 'permanent');
    for (const port of loopbackPorts) relays.push(await startTcpRelay(port, { listenHost: gateway, listenPort: port }));
    if (loopbackPorts.length > 0) {
      // Plain Node (type stripping): the relay script needs nothing from node_modules.
      const pairs = loopbackPorts.map((port) => `127.0.0.1:${port}=${gateway}:${port}`);
      const started = startProcess(`${id} bridge`, 'ip', ['netns', 'exec', name, process.execPath, 'scripts/tcp-relay.ts', ...pairs], process.env, false);
      inside = started;
      await waitFor(`the bridge into ${name}`, started, () => started.output.includes('relaying'), 10_000);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return {
    name,
    address,
    command: ['ip', 'netns', 'exec', name],
    cut: async () => {
      await ip('-n', name, 'link', 'set', 'eth0', 'down');
    },
    restore: async () => {
      await ip('-n', name, 'link', 'set', 'eth0', 'up');
    },
    close,
  };
}

/**
 * The stack option ({@link LocalStackOptions.hostNetwork}) that runs the hosts named in `ids`
 * (e.g. `['host-3']`) each in a namespace of its own, bridging the stack's loopback ports and
 * `extraLoopbackPorts` (a test's own sites) into it. Where namespaces cannot be made (not root),
 * those hosts run on loopback as the others do, and their `cut()` freezes them instead (SIGSTOP):
 * said once on stderr.
 */
export function hostNamespaces(ids: readonly string[], extraLoopbackPorts: readonly number[] = []): NonNullable<LocalStackOptions['hostNetwork']> {
  let warned = false;
  return async (id, loopbackPorts) => {
    if (!ids.includes(id)) return undefined;
    if (await namespacesAvailable()) return startHostNamespace(id, [...new Set([...loopbackPorts, ...extraLoopbackPorts])]);
    if (!warned)
      process.stderr.write(`[host-network] network namespaces are not available here (not root?): ${ids.join(', ')} run on loopback and are cut by freezing\n`);
    warned = true;
    return undefined;
  };
}
