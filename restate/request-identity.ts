// Restate's request identity: the server signs every request it makes to a service endpoint
// (discovery and invocations) with an Ed25519 key, and an endpoint given the public key refuses
// any caller that cannot sign, so reaching the workflow endpoint's port is not enough to run,
// signal or end a workflow. The server reads the private key from a PKCS#8 PEM file; the SDK takes
// the public key as `publickeyv1_` and the base58 of its 32 bytes.
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export function base58(bytes: Uint8Array): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE58[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = `1${out}`;
  }
  return out;
}

/** Writes a new Ed25519 private key to `file` (0600) unless one is there. */
export function ensureRequestIdentityKey(file: string): void {
  if (fs.existsSync(file)) return;
  const { privateKey } = generateKeyPairSync('ed25519');
  fs.writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
}

/** The public key of the Ed25519 private key in `file`, as the SDK's `identityKeys` take it. */
export function requestIdentityPublicKey(file: string): string {
  const key = createPrivateKey(fs.readFileSync(file));
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`${file} is not an Ed25519 private key (Restate's request identity needs one)`);
  const raw = Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x!, 'base64url');
  return `publickeyv1_${base58(raw)}`;
}
