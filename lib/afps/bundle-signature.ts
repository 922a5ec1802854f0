// Ed25519 signatures of bundles. A key is named by its trust-root entry: the standard base64 of
// its raw 32-byte public key, the form AFPS_TRUST_ROOT lists.
import crypto, { type KeyObject } from 'node:crypto';
import { isJsonObject } from './field-reader.ts';

export const SIGNATURE_ALGORITHM = 'ed25519';
const MESSAGE_PREFIX = 'afps-bundle-signature/1 ';

export interface BundleSignature {
  algorithm: typeof SIGNATURE_ALGORITHM;
  /** the signer's public key as a trust-root entry */
  key_id: string;
  /** standard base64 of the 64-byte signature */
  signature: string;
}

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  trustRootEntry: string;
}

/** The bytes a signature covers: a fixed prefix, so the key signs nothing else by accident, then the overall integrity. */
export function signatureMessage(overallIntegrity: string): Buffer {
  return Buffer.from(`${MESSAGE_PREFIX}${overallIntegrity}`, 'utf8');
}

export function generateSigningKey(): SigningKey {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  return { privateKey, publicKey, trustRootEntry: ed25519PublicKeyToTrustRootEntry(publicKey) };
}

/** Accepts a public key, or a private key whose public half is wanted. */
export function ed25519PublicKeyToTrustRootEntry(key: KeyObject): string {
  const publicKey = key.type === 'private' ? crypto.createPublicKey(key) : key;
  if (publicKey.asymmetricKeyType !== 'ed25519') throw new TypeError('An Ed25519 key is required.');
  const jwk = publicKey.export({ format: 'jwk' });
  return Buffer.from(jwk.x!, 'base64url').toString('base64');
}

/** The raw 32-byte key a trust-root entry names, or null when the entry is not one. */
export function decodeTrustRootEntry(entry: string): Buffer | null {
  const text = entry.trim();
  if (!/^[A-Za-z0-9+/]{43}=$/.test(text)) return null;
  const raw = Buffer.from(text, 'base64');
  return raw.length === 32 ? raw : null;
}

export function isTrustRootEntry(entry: string): boolean {
  return decodeTrustRootEntry(entry) !== null;
}

export function signBundleIntegrity(overallIntegrity: string, privateKey: KeyObject): BundleSignature {
  if (privateKey.asymmetricKeyType !== 'ed25519' || privateKey.type !== 'private') {
    throw new TypeError('Bundles are signed with an Ed25519 private key.');
  }
  return {
    algorithm: SIGNATURE_ALGORITHM,
    key_id: ed25519PublicKeyToTrustRootEntry(privateKey),
    signature: crypto.sign(null, signatureMessage(overallIntegrity), privateKey).toString('base64'),
  };
}

export type SignatureCheck =
  | { state: 'unsigned' }
  | { state: 'malformed'; reason: string }
  | { state: 'bad-signature'; keyId: string }
  | { state: 'untrusted'; keyId: string }
  | { state: 'trusted'; keyId: string };

/** Judges signature.json (when present) against the bundle's overall integrity and the trust root. */
export function checkBundleSignature(bytes: Buffer | undefined, overallIntegrity: string, trustRoot: readonly string[]): SignatureCheck {
  if (!bytes) return { state: 'unsigned' };
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { state: 'malformed', reason: 'signature.json is not valid JSON' };
  }
  if (!isJsonObject(raw) || Object.keys(raw).some((k) => !['algorithm', 'key_id', 'signature'].includes(k))) {
    return { state: 'malformed', reason: 'signature.json must hold exactly algorithm, key_id and signature' };
  }
  if (raw.algorithm !== SIGNATURE_ALGORITHM) return { state: 'malformed', reason: `signature algorithm must be ${SIGNATURE_ALGORITHM}` };
  const key = typeof raw.key_id === 'string' ? decodeTrustRootEntry(raw.key_id) : null;
  if (!key) return { state: 'malformed', reason: 'key_id must be the base64 of a 32-byte Ed25519 public key' };
  const keyId = key.toString('base64');
  const signature = typeof raw.signature === 'string' && /^[A-Za-z0-9+/]{86}==$/.test(raw.signature)
    ? Buffer.from(raw.signature, 'base64')
    : null;
  if (!signature || signature.length !== 64) return { state: 'malformed', reason: 'signature must be the base64 of a 64-byte Ed25519 signature' };

  const publicKey = crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.toString('base64url') }, format: 'jwk' });
  if (!crypto.verify(null, signatureMessage(overallIntegrity), publicKey, signature)) return { state: 'bad-signature', keyId };

  const trusted = trustRoot.some((entry) => decodeTrustRootEntry(entry)?.equals(key));
  return trusted ? { state: 'trusted', keyId } : { state: 'untrusted', keyId };
}
