// Restate's request identity keys: base58 as Bitcoin's alphabet writes it (leading zero bytes as
// '1'), a generated key kept (0600) and never replaced, and its public key in the SDK's form.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { base58, ensureRequestIdentityKey, requestIdentityPublicKey } from '../../restate/request-identity.ts';

test('base58 writes known values, leading zero bytes as 1', () => {
  assert.equal(base58(Buffer.from('Hello World!')), '2NEpo7TZRRrLZSi2U');
  assert.equal(base58(Buffer.from([0, 0, 1])), '112');
  assert.equal(base58(Buffer.from([0xff, 0xff])), 'LUv');
  assert.equal(base58(Buffer.alloc(0)), '');
});

test('a generated key is kept with mode 0600 and gives a publickeyv1 of 32 bytes; a key of another type is refused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'identity-'));
  try {
    const file = path.join(dir, 'restate-identity.pem');
    ensureRequestIdentityKey(file);
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    const first = requestIdentityPublicKey(file);
    assert.match(first, /^publickeyv1_[1-9A-HJ-NP-Za-km-z]{43,44}$/);
    ensureRequestIdentityKey(file);
    assert.equal(requestIdentityPublicKey(file), first, 'a second start keeps the key');
    const rsa = path.join(dir, 'rsa.pem');
    fs.writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    assert.throws(() => requestIdentityPublicKey(rsa), /not an Ed25519 private key/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
