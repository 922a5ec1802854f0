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

export type IdPrefix = 'req' | 'eu' | 'spc' | 'wh' | 'sched' | 'run' | 'org' | 'usr' | 'key' | 'ses' | 'pkg' | 'role' | 'inv' | 'cred' | 'mdl' | 'msg' | 'log' | 'file';

/** `<prefix>_<22 base62 chars>`: sortable enough, URL-safe, 131 bits of randomness. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(22)}`;
}

export function newRequestId(): string {
  return `req_${randomUUID()}`;
}

export function hasPrefix(id: unknown, prefix: IdPrefix): id is string {
  return typeof id === 'string' && id.startsWith(`${prefix}_`) && id.length > prefix.length + 1;
}
