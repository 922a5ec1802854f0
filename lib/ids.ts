// Prefixed identifiers. Ids carry their kind so a stray id in the wrong place is obvious.
import { randomBytes, randomUUID } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** n random base62 characters, without modulo bias. */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const byte of randomBytes(n * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

export type IdPrefix = 'req' | 'eu' | 'spc' | 'wh' | 'sched' | 'run' | 'org' | 'usr' | 'key' | 'ses' | 'pkg' | 'role' | 'inv' | 'cred' | 'mdl' | 'msg' | 'log' | 'file' | 'upl' | 'oac' | 'prx' | 'chat' | 'cmsg' | 'mpair' | 'apr';

function base62Fixed(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * `<prefix>_` + 8 base62 characters of the creation time in ms + 14 random ones (83 bits):
 * ids sort in creation order, which cursor pagination relies on.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${base62Fixed(Date.now(), 8)}${randomBase62(14)}`;
}

export function newRequestId(): string {
  return `req_${randomUUID()}`;
}

export function hasPrefix(id: unknown, prefix: IdPrefix): id is string {
  return typeof id === 'string' && id.startsWith(`${prefix}_`) && id.length > prefix.length + 1;
}
