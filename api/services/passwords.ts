// Password hashing with scrypt (memory-hard, in node:crypto). Stored as
// `$scrypt$ln=<log2 N>,r=<r>,p=<p>$<salt>$<hash>` (base64url): the parameters travel with each
// hash, so raising them later still verifies older hashes.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const SALT_BYTES = 16;
const FORMAT = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 256;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number, length: number): Promise<Buffer> {
  const N = 2 ** logN;
  // scrypt needs 128 * N * r bytes; leave headroom over node's 32 MiB default.
  const maxmem = 256 * N * r + 1024 * 1024;
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, length, { N, r, p, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, LOG_N, R, P, KEY_LENGTH);
  return `$scrypt$ln=${LOG_N},r=${R},p=${P}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

let decoy: Promise<string> | null = null;

/**
 * Compares in constant time. With no stored hash (unknown account, or one without a password) it
 * still derives a key against a decoy, so the answer takes as long as for a wrong password.
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const m = stored ? FORMAT.exec(stored) : null;
  if (!m) {
    decoy ??= hashPassword(randomBytes(16).toString('hex'));
    await verifyPassword(password, await decoy);
    return false;
  }
  const [, ln, r, p, saltText, hashText] = m;
  const expected = Buffer.from(hashText, 'base64url');
  const actual = await derive(password, Buffer.from(saltText, 'base64url'), Number(ln), Number(r), Number(p), expected.length);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
