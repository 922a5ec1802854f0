// The egress guard: outbound requests the platform makes on a user's behalf (repository imports,
// integration calls) may reach only public addresses. A host resolving to a loopback, private,
// link-local, shared (CGNAT), multicast, reserved or metadata address is refused unless the
// operator names that host and port exactly in EGRESS_ALLOW_INTERNAL_HOSTS; the platform's own
// endpoints are refused even then. The connection is made to the address that was checked (no
// second DNS answer can swap it: no rebinding), and redirects are followed only to targets that
// pass the same check.
import dns from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import net, { type LookupFunction } from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import { openRequest, responseOf, type OutboundInit } from './outbound-http.ts';
import { openTunnel, type OutboundProxy } from './proxy-tunnel.ts';

/** A host and port the platform itself serves on (its API, workflow engine, database). */
export interface PlatformEndpoint {
  host: string;
  port: number;
}

export interface EgressOptions {
  /** host:port entries ([v6]:port for IPv6 literals) whose host may resolve to internal addresses on that port */
  allowInternalHosts: string[];
  /** when given, an internal address is allowed only for a host named in both lists (hosts, no port) */
  authorizedHosts?: string[];
  /** never reached on their port at a loopback, internal or this machine's address, whatever the allowlist says */
  platformEndpoints?: PlatformEndpoint[];
  /** name resolution; defaults to the system resolver (tests may pin answers) */
  resolve?: (host: string) => Promise<string[]>;
  /** certificate authorities (PEM) trusted beside the system's for https targets (SANDBOX_EGRESS_CA_FILE) */
  extraCa?: string;
}

/** The `ca` option of a TLS connection under `opts`: the system's authorities and the operator's extra ones; undefined: the defaults. */
export function trustedCa(opts: Pick<EgressOptions, 'extraCa'>): string[] | undefined {
  return opts.extraCa ? [...tls.rootCertificates, opts.extraCa] : undefined;
}

export type EgressRefusalKind = 'invalid_url' | 'blocked' | 'unresolvable';

export class EgressRefusal extends Error {
  readonly kind: EgressRefusalKind;
  readonly address?: string;
  constructor(kind: EgressRefusalKind, message: string, address?: string) {
    super(message);
    this.name = 'EgressRefusal';
    this.kind = kind;
    this.address = address;
  }
}

export interface CheckedTarget {
  url: URL;
  /** the resolved addresses, every one of them allowed */
  addresses: string[];
}

// ---------------------------------------------------------------- address classification

type Range = [base: bigint, prefix: number, label: string];

function v4(text: string): bigint {
  return text.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

// The IANA IPv4 and IPv6 Special-Purpose Address Registries (and the multicast ones), reviewed
// 2026-11-25; their newest rows then: RFC 9780 100:0:0:1::/64, RFC 9637 3fff::/20, RFC 9602
// 5f00::/16. Blocks the registry marks globally reachable (AS112, AMT) stay public.
const IPV4_RANGES: Range[] = [
  // Stryker disable next-line StringLiteral: v4('') is 0n too, the same base
  [v4('0.0.0.0'), 8, 'unspecified ("this network")'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'shared address space (CGNAT)'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local (cloud metadata)'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'IETF protocol assignments (DS-Lite, NAT64 discovery)'],
  [v4('192.0.2.0'), 24, 'documentation'],
  [v4('192.88.99.0'), 24, '6to4 relay anycast (deprecated)'],
  [v4('192.168.0.0'), 16, 'private'],
  [v4('198.18.0.0'), 15, 'benchmarking'],
  [v4('198.51.100.0'), 24, 'documentation'],
  [v4('203.0.113.0'), 24, 'documentation'],
  [v4('224.0.0.0'), 4, 'multicast'],
  [v4('240.0.0.0'), 4, 'reserved (and broadcast)'],
];

/** 128-bit value of an IPv6 literal (which net.isIPv6 already accepted). */
function v6(text: string): bigint {
  let head = text;
  const groups: number[] = [];
  // an embedded dotted quad takes the last 32 bits
  // Stryker disable next-line Regex: in an address net.isIPv6 accepted, a dotted quad can only end it
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(head);
  let tail: number[] = [];
  if (dotted) {
    const n = Number(v4(dotted[1]));
    tail = [Math.floor(n / 65536), n % 65536];
    head = head.slice(0, -dotted[1].length);
    // Stryker disable next-line StringLiteral: what precedes the quad in a valid address always ends in ':'
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const gap = head.indexOf('::');
  if (gap >= 0) {
    const left = parse(head.slice(0, gap));
    const right = [...parse(head.slice(gap + 2)), ...tail];
    groups.push(...left, ...new Array(8 - left.length - right.length).fill(0), ...right);
  } else {
    groups.push(...parse(head), ...tail);
  }
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

// Special-purpose blocks; forms that carry an IPv4 address are judged in classifyAddress first,
// and anything outside global unicast 2000::/3 is refused there, listed here or not.
const IPV6_RANGES: Range[] = [
  // Stryker disable next-line StringLiteral: v6('') is 0n too, the same base
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('64:ff9b:1::'), 48, 'local-use NAT64'],
  [v6('100::'), 64, 'discard-only'],
  [v6('100:0:0:1::'), 64, 'dummy prefix'],
  [v6('2001:2::'), 48, 'benchmarking'],
  [v6('2001::'), 23, 'IETF protocol assignments (Teredo and others)'],
  [v6('2001:db8::'), 32, 'documentation'],
  [v6('3fff::'), 20, 'documentation'],
  [v6('5f00::'), 16, 'segment routing (SRv6) SID'],
  [v6('fc00::'), 7, 'unique local (includes fd00:ec2::254 metadata)'],
  [v6('fe80::'), 10, 'link-local'],
  [v6('fec0::'), 10, 'site-local'],
  [v6('ff00::'), 8, 'multicast'],
];

function inRange(value: bigint, bits: number, [base, prefix]: Range): boolean {
  const shift = BigInt(bits - prefix);
  return value >> shift === base >> shift;
}

function classifyV4(value: bigint): string | null {
  for (const range of IPV4_RANGES) if (inRange(value, 32, range)) return range[2];
  return null;
}

/**
 * Why an IP address is not a public destination, or null when it is one. IPv6 forms that carry
 * an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4
 * 2002::/16) are judged by the IPv4 address they carry.
 */
export function classifyAddress(address: string): string | null {
  const family = net.isIP(address);
  if (family === 4) return classifyV4(v4(address));
  if (family !== 6) return 'not an IP address';
  const value = v6(address);
  const top96 = value >> 32n;
  const low32 = value & 0xffffffffn;
  if (top96 === 0xffffn) return classifyV4(low32); // ::ffff:a.b.c.d (IPv4-mapped)
  if (top96 === 0xffff0000n) return 'IPv4-translated (SIIT)'; // ::ffff:0:a.b.c.d
  if (top96 === 0n && value > 1n) return classifyV4(low32); // ::a.b.c.d (deprecated)
  if (top96 === v6('64:ff9b::') >> 32n) return classifyV4(low32); // NAT64 well-known prefix
  if (value >> 112n === 0x2002n) return classifyV4((value >> 80n) & 0xffffffffn); // 6to4
  for (const range of IPV6_RANGES) if (inRange(value, 128, range)) return range[2];
  if (value >> 125n !== 1n) return 'unallocated (outside global unicast 2000::/3)';
  return null;
}

export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === null;
}

// ---------------------------------------------------------------- target checks

function hostOf(url: URL): string {
  // URL keeps IPv6 literals in brackets
  // Stryker disable next-line Regex: a URL's hostname is bracketed whole or not at all
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/** The port a URL connects to: its own, or its scheme's default. */
export function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/**
 * Reads one EGRESS_ALLOW_INTERNAL_HOSTS entry: host:port, an IPv6 literal as [v6]:port. Null when
 * the entry names no port (or a bad one).
 */
export function parseHostPort(entry: string): PlatformEndpoint | null {
  const match = /^(?:\[([0-9a-f:.]+)\]|([^\s:[\]/@]+)):(\d{1,5})$/i.exec(entry.trim());
  if (!match) return null;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return null;
  if (match[1] === undefined) return { host: match[2].toLowerCase(), port };
  if (!net.isIPv6(match[1])) return null;
  // the form a URL gives the same literal (compressed, lower case)
  return { host: new URL(`http://[${match[1]}]/`).hostname.slice(1, -1), port };
}

function named(list: string[], host: string): boolean {
  // Stryker disable next-line Regex: an entry's brackets, if any, wrap it whole (a host is never bracketed inside)
  return list.some((entry) => entry.trim().replace(/^\[(.*)\]$/, '$1').toLowerCase() === host);
}

/** Exact match on host (case-insensitive) and port: no suffixes, no other port of the same host. */
function allowlisted(list: string[], host: string, port: number): boolean {
  return list.some((entry) => {
    const allowed = parseHostPort(entry);
    return allowed !== null && allowed.port === port && allowed.host === host;
  });
}

/** Canonical text of an address (IPv6 compared by value), so differently written forms compare equal. */
function canonicalAddress(address: string): string {
  return net.isIPv6(address) ? `v6:${v6(address)}` : address;
}

/** The addresses of this machine's own interfaces: a request to any of them reaches this machine. */
function machineAddresses(): Set<string> {
  const found = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) {
    // Stryker disable next-line Regex,StringLiteral: node gives the scope apart (scopeid); a '%' suffix is only guarded against
    for (const info of list ?? []) found.add(canonicalAddress(info.address.replace(/%.*$/, '')));
  }
  return found;
}

/** Whether an address is one of this machine's own (IPv6 compared by value). */
export function isMachineAddress(address: string): boolean {
  return machineAddresses().has(canonicalAddress(address));
}

function ownEndpoint(opts: EgressOptions, host: string, port: number, addresses: string[]): PlatformEndpoint | undefined {
  const candidates = (opts.platformEndpoints ?? []).filter((e) => e.port === port);
  // Stryker disable next-line ConditionalExpression: a shortcut (no interface listing when no endpoint shares the port); find() on none is undefined too
  if (candidates.length === 0) return undefined;
  const local = addresses.some((a) => classifyAddress(a) !== null || isMachineAddress(a));
  return candidates.find((e) => {
    // Stryker disable next-line Regex: an endpoint's brackets, if any, wrap it whole
    const endpointHost = e.host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    return local || endpointHost === host || addresses.some((a) => net.isIP(endpointHost) && canonicalAddress(a) === canonicalAddress(endpointHost));
  });
}

async function systemResolve(host: string): Promise<string[]> {
  // Stryker disable next-line BooleanLiteral: the order of the answers only; every one of them is judged
  const answers = await dns.lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
}

/**
 * Resolves the URL's host and refuses it when any address it resolves to is not public, unless
 * the host is allowed to be internal. Throws EgressRefusal.
 */
export async function checkEgressTarget(rawUrl: string | URL, opts: EgressOptions): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(String(rawUrl));
  } catch {
    throw new EgressRefusal('invalid_url', 'The URL cannot be parsed.');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new EgressRefusal('invalid_url', `The scheme ${url.protocol} is not allowed.`);
  if (url.username || url.password) throw new EgressRefusal('invalid_url', 'URLs with credentials are not allowed.');
  const host = hostOf(url);
  // Stryker disable next-line ConditionalExpression,StringLiteral: the URL parser gives every http(s) URL a host; kept as a guard
  if (!host) throw new EgressRefusal('invalid_url', 'The URL has no host.');

  let addresses: string[];
  if (net.isIP(host)) addresses = [host];
  else {
    try {
      addresses = await (opts.resolve ?? systemResolve)(host);
    } catch {
      throw new EgressRefusal('unresolvable', `The host ${host} does not resolve.`);
    }
    if (addresses.length === 0) throw new EgressRefusal('unresolvable', `The host ${host} does not resolve.`);
  }

  const port = effectivePort(url);
  if (ownEndpoint(opts, host, port, addresses)) {
    throw new EgressRefusal('blocked', `The address ${url.host} is one of the platform's own endpoints.`, addresses[0]);
  }
  const internalAllowed = allowlisted(opts.allowInternalHosts, host, port) && (opts.authorizedHosts === undefined || named(opts.authorizedHosts, host));
  if (!internalAllowed) {
    for (const address of addresses) {
      const reason = classifyAddress(address);
      if (reason) throw new EgressRefusal('blocked', `The host ${host} resolves to ${address}, a ${reason} address.`, address);
    }
  }
  return { url, addresses };
}

// ---------------------------------------------------------------- guarded fetch

export interface GuardedFetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** redirects followed, each target checked again; 0 (default) returns the 3xx response */
  maxRedirects?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** an HTTP CONNECT proxy every hop goes through (lib/proxy-tunnel.ts); the guard judges it too */
  proxy?: OutboundProxy | null;
}

/** Every name lookup of a connection answers the checked address: the connection cannot be rebound. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  const address = target.addresses[0];
  const family = net.isIP(address);
  return ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as LookupFunction;
}

/** One request to an already checked target, connected to the checked address. */
async function requestPinned(target: CheckedTarget, init: GuardedFetchInit, opts: EgressOptions): Promise<Response> {
  const common = { method: init.method, headers: init.headers, body: init.body, signal: init.signal, timeoutMs: init.timeoutMs, ca: trustedCa(opts) };
  const res = init.proxy
    ? await openRequest(target.url, { ...common, socket: await openTunnel(init.proxy, target, opts, init) })
    : await openRequest(target.url, { ...common, agent: false, lookup: pinnedLookup(target) });
  return responseOf(res, init.method);
}

/**
 * One guarded request with node's own client (no fetch loaded): the target is checked and the
 * connection pinned to the checked address; no redirect is followed. A kept-alive connection
 * (node's global agents) was itself made to an address that passed the check.
 */
export async function guardedRequest(
  rawUrl: string | URL,
  init: Omit<OutboundInit, 'lookup' | 'socket'> & { proxy?: OutboundProxy | null },
  opts: EgressOptions,
): Promise<IncomingMessage> {
  const target = await checkEgressTarget(rawUrl, opts);
  const { proxy, ...rest } = init;
  if (proxy) return openRequest(target.url, { ...rest, agent: undefined, socket: await openTunnel(proxy, target, opts, rest) });
  return openRequest(target.url, { ...rest, lookup: pinnedLookup(target), ca: trustedCa(opts) });
}

/**
 * fetch, guarded: the target is checked, the connection pinned to the checked address, and a
 * redirect is followed (up to maxRedirects) only after its target passes the same check.
 * The returned Response carries `url` of the last hop in `redirectedTo` when it moved.
 */
export async function guardedFetch(rawUrl: string | URL, init: GuardedFetchInit, opts: EgressOptions): Promise<Response> {
  let target = await checkEgressTarget(rawUrl, opts);
  let hops = 0;
  let current = init;
  for (;;) {
    const res = await requestPinned(target, current, opts);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || res.status === 304 || !location || hops >= (init.maxRedirects ?? 0)) return res;
    await res.body?.cancel().catch(() => {});
    hops++;
    const next = new URL(location, target.url);
    // a redirect to another origin does not carry the caller's headers (credentials stay home)
    const sameOrigin = next.origin === target.url.origin;
    // Stryker disable next-line StringLiteral: node's client sends '' as GET
    const method = res.status === 307 || res.status === 308 ? current.method : 'GET';
    current = { ...current, method, body: method === current.method ? current.body : undefined, headers: sameOrigin ? current.headers : undefined };
    target = await checkEgressTarget(next, opts);
  }
}
