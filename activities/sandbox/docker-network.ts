// Host-side network plumbing of the docker backend.
// - Host firewall: a container reaches every port the host listens on through its network's
//   gateway address, --internal or not. Each network of the backend gets INPUT rules, keyed by its
//   bridge interface, that drop such traffic (a run network: all of it; the egress network: all
//   but the platform relays' ports). They are removed with the network.
// - Relays: the platform (and any local service the run must reach, as a local model server)
//   listens on 127.0.0.1 or an internal address, which a container on the egress network cannot
//   reach. A relay listens on the egress network's gateway address and forwards to one such
//   target; the sidecar's URLs are rewritten to go through it. Only the sidecar is on the egress
//   network.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { promisify } from 'node:util';
import { classifyAddress } from '../../lib/egress.ts';
import type { Logger } from '../../lib/log.ts';

const run = promisify(execFile);
const TABLES = ['iptables', 'ip6tables'] as const;
const RULE_TAG = 'agent-platform sandbox';

async function tableCommand(table: (typeof TABLES)[number], args: string[]): Promise<boolean> {
  try {
    await run(table, ['-w', '5', ...args]);
    return true;
  } catch {
    return false;
  }
}

/** Drops everything that enters the host from `bridge`, except TCP to the given ports. */
export async function closeHostPorts(bridge: string, allowTcpPorts: number[] = []): Promise<void> {
  const comment = ['-m', 'comment', '--comment', `${RULE_TAG} ${bridge}`];
  const v4 = await tableCommand('iptables', ['-I', 'INPUT', '1', '-i', bridge, ...comment, '-j', 'DROP']);
  if (!v4) throw new Error(`iptables could not close the host's ports to ${bridge}: the docker backend needs iptables as root`);
  // the bridge has an IPv6 link-local address: close that way in too (no ip6tables: no IPv6 to close)
  await tableCommand('ip6tables', ['-I', 'INPUT', '1', '-i', bridge, ...comment, '-j', 'DROP']);
  // answers to connections the host opened (the adapter telling a sidecar of its agent's end) pass
  await tableCommand('iptables', ['-I', 'INPUT', '1', '-i', bridge, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', ...comment, '-j', 'ACCEPT']);
  for (const port of allowTcpPorts) await allowHostPort(bridge, port);
}

/** Lets `bridge` reach one TCP port of the host (a relay), ahead of its drop rule. */
export async function allowHostPort(bridge: string, port: number): Promise<void> {
  const ok = await tableCommand('iptables', [
    '-I', 'INPUT', '1', '-i', bridge, '-p', 'tcp', '--dport', String(port), '-m', 'comment', '--comment', `${RULE_TAG} ${bridge}`, '-j', 'ACCEPT',
  ]);
  if (!ok) throw new Error(`iptables could not open relay port ${port} to ${bridge}`);
}

async function disallowHostPort(bridge: string, port: number): Promise<void> {
  await tableCommand('iptables', [
    '-D', 'INPUT', '-i', bridge, '-p', 'tcp', '--dport', String(port), '-m', 'comment', '--comment', `${RULE_TAG} ${bridge}`, '-j', 'ACCEPT',
  ]);
}

/** Removes every rule this module added for `bridge`. */
export async function removeHostRules(bridge: string): Promise<void> {
  for (const table of TABLES) {
    let listed: string;
    try {
      listed = (await run(table, ['-w', '5', '-S', 'INPUT'])).stdout;
    } catch {
      continue;
    }
    for (const line of listed.split('\n')) {
      if (!line.startsWith('-A INPUT ') || !line.includes(`"${RULE_TAG} ${bridge}"`)) continue;
      // the rule as listed, quotes removed, deleted by its own specification
      const spec = line.slice('-A INPUT '.length).match(/"[^"]*"|\S+/g)?.map((part) => part.replace(/^"|"$/g, '')) ?? [];
      await tableCommand(table, ['-D', 'INPUT', ...spec]);
    }
  }
}

/**
 * Makes `bridge`'s rules true again when a worker starts, keeping the opened ports whose relay still
 * listens on `listenHost`: those of another live process on this host (another worker, a test's
 * stand-in provider). A dead worker's ports close; its successor re-opens the relays it adopts.
 * While the drop rule stands the rules are mended in place, never taken down and laid again: a
 * relay another worker opens meanwhile keeps its opening. Only when the drop rule is gone (a host
 * reboot or a daemon restart flushed the table) are they laid afresh.
 */
export async function relayHostRules(bridge: string, listenHost: string): Promise<void> {
  // the openings first, then the listeners: a relay listens before its port is opened, so every
  // opening seen here whose relay lives is seen listening below
  const opened = await openedPorts(bridge);
  const live = await listeningPorts(listenHost);
  if (!(await isClosed(bridge))) {
    await removeHostRules(bridge);
    await closeHostPorts(bridge, opened.filter((port) => live.has(port)));
    return;
  }
  for (const port of opened) if (!live.has(port)) await disallowHostPort(bridge, port);
}

/** Whether `bridge`'s drop rule is in place. */
async function isClosed(bridge: string): Promise<boolean> {
  try {
    const listed = (await run('iptables', ['-w', '5', '-S', 'INPUT'])).stdout;
    return listed.split('\n').some((line) => line.includes(`"${RULE_TAG} ${bridge}"`) && line.includes('-j DROP'));
  } catch {
    return false;
  }
}

/** The TCP ports this module opened to `bridge`. */
async function openedPorts(bridge: string): Promise<number[]> {
  let listed: string;
  try {
    listed = (await run('iptables', ['-w', '5', '-S', 'INPUT'])).stdout;
  } catch {
    return [];
  }
  const ports = new Set<number>();
  for (const line of listed.split('\n')) {
    if (!line.includes(`"${RULE_TAG} ${bridge}"`) || !line.includes('-j ACCEPT')) continue;
    const port = /--dport (\d+)/.exec(line)?.[1];
    if (port) ports.add(Number(port));
  }
  return [...ports];
}

/** Ports with a TCP listener on `host` (IPv4) or on every address, in this network namespace. */
async function listeningPorts(host: string): Promise<Set<number>> {
  // /proc/net/tcp writes each address as its 32 bits in host (little-endian) order, in hex
  const hex = host.split('.').map((b) => Number(b).toString(16).padStart(2, '0').toUpperCase()).reverse().join('');
  const ports = new Set<number>();
  const table = await readFile('/proc/net/tcp', 'utf8').catch(() => '');
  for (const line of table.split('\n').slice(1)) {
    const [, local, , state] = line.trim().split(/\s+/);
    if (state !== '0A' || !local) continue;
    const [address, port] = local.split(':');
    if (address === hex || address === '00000000') ports.add(parseInt(port, 16));
  }
  return ports;
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || (net.isIPv4(host) && host.startsWith('127.'));
}

/**
 * Whether a sidecar reaches `hostname` only through a relay: loopback, and any internal address
 * literal. An address of this host is closed to the egress network by its INPUT rules, another
 * docker network's (a compose deployment's platform) is isolated from it by docker; a LAN machine
 * would be reachable, and relaying it costs only the hop. Names are left to the sidecar's resolver.
 */
export function needsRelay(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return isLoopbackHost(host) || (net.isIP(host) !== 0 && classifyAddress(host) !== null);
}

/** TCP relays from the egress network's gateway address to targets a sidecar cannot reach itself (needsRelay). */
export class LoopbackRelays {
  /** by listening port: a target may have several (one opened here, others adopted from an earlier worker) */
  private readonly relays = new Map<number, { server: net.Server; target: string }>();
  private readonly sockets = new Set<net.Socket>();

  constructor(
    readonly listenHost: string,
    private readonly bridge: string,
    private readonly log?: Logger,
  ) {}

  /**
   * The relay's port for `target` (host:port), opened on first use below the kernel's ephemeral range
   * (an outgoing connection never takes such a port, so a restarted worker can have it again);
   * `port` asks for a given one (re-attach).
   */
  async portFor(target: string, port = 0): Promise<number> {
    if (port !== 0) {
      const held = this.relays.get(port);
      if (held && held.target !== target) throw new Error(`relay port ${port} leads to ${held.target} already`);
      if (held) return port;
    } else {
      const open = [...this.relays].find(([, r]) => r.target === target);
      if (open) return open[0];
    }
    const [host, targetPort] = splitHostPort(target);
    const server = net.createServer((inbound) => {
      const outbound = net.connect({ host, port: targetPort });
      inbound.pipe(outbound).pipe(inbound);
      this.sockets.add(inbound).add(outbound);
      const close = () => {
        inbound.destroy();
        outbound.destroy();
        this.sockets.delete(inbound);
        this.sockets.delete(outbound);
      };
      inbound.on('close', close);
      outbound.on('close', close);
      inbound.on('error', close);
      outbound.on('error', close);
    });
    const listening = port !== 0 ? await listen(server, this.listenHost, port) : await listenBelowEphemeral(server, this.listenHost);
    // a concurrent caller may have opened one for the target meanwhile: keep the first
    if (port === 0 && [...this.relays.values()].some((r) => r.target === target)) {
      server.close();
      return this.portFor(target);
    }
    this.relays.set(listening, { server, target });
    await allowHostPort(this.bridge, listening);
    this.log?.debug('sandbox relay opened', { target, port: listening });
    return listening;
  }

  entries(): Array<{ target: string; port: number }> {
    return [...this.relays].map(([port, r]) => ({ target: r.target, port }));
  }

  async close(): Promise<void> {
    const closing = [...this.relays.values()].map((r) => new Promise<void>((resolve) => r.server.close(() => resolve())));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await Promise.all(closing);
    for (const port of this.relays.keys()) await disallowHostPort(this.bridge, port);
    this.relays.clear();
  }
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as net.AddressInfo).port);
    });
  });
}

const LOW_PORT = 20_000;
const EPHEMERAL_START = 32_768;

async function listenBelowEphemeral(server: net.Server, host: string): Promise<number> {
  for (let attempt = 0; attempt < 64; attempt++) {
    try {
      return await listen(server, host, LOW_PORT + Math.floor(Math.random() * (EPHEMERAL_START - LOW_PORT)));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' && (err as NodeJS.ErrnoException).code !== 'EACCES') throw err;
    }
  }
  // a crowded low range: let the kernel pick
  return listen(server, host, 0);
}

function splitHostPort(target: string): [string, number] {
  const colon = target.lastIndexOf(':');
  return [target.slice(0, colon).replace(/^\[|\]$/g, ''), Number(target.slice(colon + 1))];
}
