// API key format: apst_ + 30 random base62 characters + a 6-character checksum.
// The checksum is CRC-32 of "apst_" + the random part, written in base62 and left-padded with
// "0" to 6 characters, so a client can reject a mistyped key without calling the server.
import { randomBase62 } from './ids.ts';

export const API_KEY_PREFIX = 'apst_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// Stryker disable next-line Regex: without an anchor a longer string passes here, then its checksum part (from character 35 to the end) is longer than 6 and never matches
const KEY_RE = /^apst_[0-9A-Za-z]{36}$/;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  // Stryker disable next-line EqualityOperator: a write at index 256 of a 256-entry typed array is dropped
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(s: string): number {
  let c = 0xffffffff;
  for (let i = 0; i < s.length; i++) c = CRC_TABLE[(c ^ s.charCodeAt(i)) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function checksum(body: string): string {
  let n = crc32(body);
  let out = '';
  while (n > 0) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out.padStart(6, '0');
}

export function newApiKey(): { key: string; prefix: string } {
  const body = API_KEY_PREFIX + randomBase62(30);
  const key = body + checksum(body);
  return { key, prefix: key.slice(0, API_KEY_PREFIX.length + 8) };
}

/** Shape and checksum only: no database involved. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_RE.test(key)) return false;
  return checksum(key.slice(0, 35)) === key.slice(35);
}
