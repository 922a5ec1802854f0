// The egress guard: outbound requests the platform makes on a user's behalf (repository imports,
// integration calls) may reach only public addresses. A host resolving to a loopback, private,
// link-local, shared (CGNAT), multicast, reserved or metadata address is refused unless the
// operator names that host literally in EGRESS_ALLOW_INTERNAL_HOSTS. The connection is made to the
// address that was checked (no second DNS answer can swap it: no rebinding), and redirects are
// followed only to targets that pass the same check.
import dns from 'node:dns/promises';
import type { IncomingMessage } from 'node:http';
import net, { type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { openRequest, type OutboundInit } from './outbound-http.ts';

export interface EgressOptions {
  /** hosts (names or IP literals, compared case-insensitively) allowed to resolve to internal addresses */
  allowInternalHosts: string[];
  /** when given, an internal address is allowed only for a host named in both lists */
  authorizedHosts?: string[];
  /** name resolution; defaults to the system resolver (tests may pin answers) */
  resolve?: (host: string) => Promise<string[]>;
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

const IPV4_RANGES: Range[] = [
  [v4('0.0.0.0'), 8, 'unspecified ("this network")'],
  [v4('10.0.0.0'), 8, 'private'],
  [v4('100.64.0.0'), 10, 'shared address space (CGNAT)'],
  [v4('127.0.0.0'), 8, 'loopback'],
  [v4('169.254.0.0'), 16, 'link-local (cloud metadata)'],
  [v4('172.16.0.0'), 12, 'private'],
  [v4('192.0.0.0'), 24, 'IETF protocol assignments'],
  [v4('192.0.2.0'), 24, 'documentation'],
  [v4('192.88.99.0'), 24, '6to4 relay anycast'],
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
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(head);
  let tail: number[] = [];
  if (dotted) {
    const n = Number(v4(dotted[1]));
    tail = [Math.floor(n / 65536), n % 65536];
    head = head.slice(0, -dotted[1].length);
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

const IPV6_RANGES: Range[] = [
  [v6('::'), 128, 'unspecified'],
  [v6('::1'), 128, 'loopback'],
  [v6('64:ff9b:1::'), 48, 'local-use NAT64'],
  [v6('100::'), 64, 'discard-only'],
  [v6('2001::'), 23, 'IETF protocol assignments (Teredo and others)'],
  [v6('2001:db8::'), 32, 'documentation'],
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
  if (top96 === 0xffffn) return classifyV4(low32) ?? null; // ::ffff:a.b.c.d
  if (top96 === 0n && value > 1n) return classifyV4(low32) ?? null; // ::a.b.c.d (deprecated)
  if (value >> 32n === v6('64:ff9b::') >> 32n) return classifyV4(low32); // NAT64
  if (value >> 112n === 0x2002n) return classifyV4((value >> 80n) & 0xffffffffn); // 6to4
  for (const range of IPV6_RANGES) if (inRange(value, 128, range)) return range[2];
  return null;
}

export function isPublicAddress(address: string): boolean {
  return classifyAddress(address) === null;
}

// ---------------------------------------------------------------- target checks

function hostOf(url: URL): string {
  // URL keeps IPv6 literals in brackets
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

function named(list: string[] | undefined, host: string): boolean {
  return (list ?? []).some((entry) => entry.trim().replace(/^\[(.*)\]$/, '$1').toLowerCase() === host);
}

async function systemResolve(host: string): Promise<string[]> {
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

  const internalAllowed = named(opts.allowInternalHosts, host) && (opts.authorizedHosts === undefined || named(opts.authorizedHosts, host));
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
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

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
async function requestPinned(target: CheckedTarget, init: GuardedFetchInit): Promise<Response> {
  const res = await openRequest(target.url, {
    method: init.method, headers: init.headers, body: init.body, signal: init.signal, timeoutMs: init.timeoutMs,
    agent: false, lookup: pinnedLookup(target),
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = res.statusCode ?? 502;
  const body = NULL_BODY_STATUSES.has(status) || (init.method ?? 'GET').toUpperCase() === 'HEAD' ? null : (Readable.toWeb(res) as ReadableStream);
  if (!body) res.resume();
  return new Response(body, { status, statusText: res.statusMessage, headers });
}

/**
 * One guarded request with node's own client (no fetch loaded): the target is checked and the
 * connection pinned to the checked address; no redirect is followed. A kept-alive connection
 * (node's global agents) was itself made to an address that passed the check.
 */
export async function guardedRequest(rawUrl: string | URL, init: Omit<OutboundInit, 'lookup'>, opts: EgressOptions): Promise<IncomingMessage> {
  const target = await checkEgressTarget(rawUrl, opts);
  return openRequest(target.url, { ...init, lookup: pinnedLookup(target) });
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
    const res = await requestPinned(target, current);
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || res.status === 304 || !location || hops >= (init.maxRedirects ?? 0)) return res;
    await res.body?.cancel().catch(() => {});
    hops++;
    const next = new URL(location, target.url);
    // a redirect to another origin does not carry the caller's headers (credentials stay home)
    const sameOrigin = next.origin === target.url.origin;
    const method = res.status === 307 || res.status === 308 ? current.method : 'GET';
    current = { ...current, method, body: method === current.method ? current.body : undefined, headers: sameOrigin ? current.headers : undefined };
    target = await checkEgressTarget(next, opts);
  }
}
